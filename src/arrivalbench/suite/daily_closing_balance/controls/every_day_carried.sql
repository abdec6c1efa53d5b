-- Rule control: the gold, except that every calendar day from the account's first movement to the
-- last day of the log gets a row with the balance carried into it (the text says days without a
-- movement of the account get no row).
CREATE TABLE IF NOT EXISTS ledger_history (
    event_id   BIGINT PRIMARY KEY,
    ts_event   TIMESTAMP,
    account_id INTEGER,
    amount     DECIMAL(12,2)
);

INSERT INTO ledger_history
SELECT event_id, ts_event, account_id, amount
FROM ledger_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE daily_closing_balance AS
SELECT a.account_id,
       CAST(d.day AS DATE) AS day,
       CAST((SELECT SUM(amount) FROM ledger_history AS h
             WHERE h.account_id = a.account_id AND CAST(h.ts_event AS DATE) <= d.day)
            AS DECIMAL(18,2)) AS closing_balance
FROM (SELECT account_id, min(CAST(ts_event AS DATE)) AS first_day
      FROM ledger_history GROUP BY account_id) AS a,
     (SELECT unnest(generate_series(min(CAST(ts_event AS DATE)), max(CAST(ts_event AS DATE)),
                                    INTERVAL 1 DAY)) AS day
      FROM ledger_history) AS d
WHERE d.day >= a.first_day;
