-- Adds the load's unapplied movements onto stored per-day net amounts, then records their ids as
-- applied in a separate statement; overdrawn days are derived from the per-day nets.
CREATE TABLE IF NOT EXISTS applied_movements (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS daily_net (
    account_id INTEGER,
    day        DATE,
    net        DECIMAL(18,2),
    PRIMARY KEY (account_id, day)
);

INSERT INTO daily_net
SELECT account_id, CAST(ts_event AS DATE), SUM(amount)
FROM (
    SELECT DISTINCT ON (event_id) *
    FROM ledger_batch
    WHERE event_id NOT IN (SELECT event_id FROM applied_movements)
)
GROUP BY ALL
ON CONFLICT (account_id, day) DO UPDATE SET net = daily_net.net + excluded.net;

INSERT INTO applied_movements
SELECT DISTINCT event_id FROM ledger_batch
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE overdraft_days AS
SELECT account_id, day, closing_balance
FROM (
    SELECT account_id, day,
           CAST(SUM(net) OVER (PARTITION BY account_id ORDER BY day) AS DECIMAL(18,2)) AS closing_balance
    FROM daily_net
)
WHERE closing_balance < 0;
