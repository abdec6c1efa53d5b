-- Rule control: the gold, except that withdrawals and fees are subtracted although their amounts
-- are already negative (the text says every amount counts with its sign as given).
CREATE TABLE IF NOT EXISTS applied_movements (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS account_balances (
    account_id       INTEGER PRIMARY KEY,
    balance          DECIMAL(18,2),
    movements        BIGINT,
    last_movement_at TIMESTAMP
);

BEGIN TRANSACTION;

CREATE TEMP TABLE fresh_movements AS
SELECT event_id, ts_event, account_id,
       CASE WHEN kind = 'deposit' THEN amount ELSE -amount END AS amount
FROM ledger_batch b
WHERE NOT EXISTS (SELECT 1 FROM applied_movements a WHERE a.event_id = b.event_id)
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1;

INSERT INTO applied_movements SELECT event_id FROM fresh_movements;

MERGE INTO account_balances AS t
USING (
    SELECT account_id, SUM(amount) AS delta, COUNT(*) AS n, MAX(ts_event) AS last_ts
    FROM fresh_movements
    GROUP BY account_id
) AS d
ON t.account_id = d.account_id
WHEN MATCHED THEN UPDATE SET
    balance          = t.balance + d.delta,
    movements        = t.movements + d.n,
    last_movement_at = greatest(t.last_movement_at, d.last_ts)
WHEN NOT MATCHED THEN INSERT (account_id, balance, movements, last_movement_at)
    VALUES (d.account_id, d.delta, d.n, d.last_ts);

COMMIT;
