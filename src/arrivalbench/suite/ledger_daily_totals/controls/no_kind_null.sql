-- Rule control: the gold, except that the sums have no ELSE, so a kind without a movement that day
-- gets NULL (the text says 0).
CREATE TABLE IF NOT EXISTS ledger_seen (
    event_id   BIGINT PRIMARY KEY,
    ts_event   TIMESTAMP,
    account_id INTEGER,
    kind       VARCHAR,
    amount     DECIMAL(12,2)
);

CREATE TABLE IF NOT EXISTS ledger_daily_totals (
    account_id  INTEGER,
    day         DATE,
    deposits    DECIMAL(18,2),
    withdrawals DECIMAL(18,2),
    fees        DECIMAL(18,2),
    movements   BIGINT,
    PRIMARY KEY (account_id, day)
);

INSERT INTO ledger_seen
SELECT event_id, ts_event, account_id, kind, amount
FROM (
    SELECT *, row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) AS copy_no
    FROM ledger_batch
) b
WHERE copy_no = 1
  AND NOT EXISTS (SELECT 1 FROM ledger_seen s WHERE s.event_id = b.event_id);

MERGE INTO ledger_daily_totals AS t
USING (
    SELECT s.account_id,
           CAST(s.ts_event AS DATE) AS day,
           SUM(CASE WHEN s.kind = 'deposit' THEN s.amount END)     AS deposits,
           SUM(CASE WHEN s.kind = 'withdrawal' THEN -s.amount END) AS withdrawals,
           SUM(CASE WHEN s.kind = 'fee' THEN -s.amount END)        AS fees,
           COUNT(*)                                                       AS movements
    FROM ledger_seen s
    WHERE (s.account_id, CAST(s.ts_event AS DATE)) IN (
        SELECT account_id, CAST(ts_event AS DATE) FROM ledger_batch
    )
    GROUP BY s.account_id, CAST(s.ts_event AS DATE)
) AS r
ON t.account_id = r.account_id AND t.day = r.day
WHEN MATCHED THEN UPDATE SET
    deposits = r.deposits, withdrawals = r.withdrawals, fees = r.fees, movements = r.movements
WHEN NOT MATCHED THEN INSERT (account_id, day, deposits, withdrawals, fees, movements)
    VALUES (r.account_id, r.day, r.deposits, r.withdrawals, r.fees, r.movements);
