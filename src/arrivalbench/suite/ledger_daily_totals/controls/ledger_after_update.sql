-- Adds each load's unapplied movements to the running totals, then records their ids as applied;
-- the two steps are separate statements, so stopping between them adds the load again on the rerun.
CREATE TABLE IF NOT EXISTS applied_ids (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS ledger_daily_totals (
    account_id  INTEGER,
    day         DATE,
    deposits    DECIMAL(18,2),
    withdrawals DECIMAL(18,2),
    fees        DECIMAL(18,2),
    movements   BIGINT,
    PRIMARY KEY (account_id, day)
);

INSERT INTO ledger_daily_totals
SELECT account_id,
       CAST(ts_event AS DATE),
       SUM(CASE WHEN kind = 'deposit' THEN amount ELSE 0 END),
       SUM(CASE WHEN kind = 'withdrawal' THEN -amount ELSE 0 END),
       SUM(CASE WHEN kind = 'fee' THEN -amount ELSE 0 END),
       COUNT(*)
FROM (
    SELECT DISTINCT ON (event_id) *
    FROM ledger_batch
    WHERE event_id NOT IN (SELECT event_id FROM applied_ids)
)
GROUP BY ALL
ON CONFLICT (account_id, day) DO UPDATE SET
    deposits    = ledger_daily_totals.deposits + excluded.deposits,
    withdrawals = ledger_daily_totals.withdrawals + excluded.withdrawals,
    fees        = ledger_daily_totals.fees + excluded.fees,
    movements   = ledger_daily_totals.movements + excluded.movements;

INSERT INTO applied_ids
SELECT DISTINCT event_id FROM ledger_batch
ON CONFLICT DO NOTHING;
