-- The existing pipeline with the kind filter removed: each load's distinct movements are added
-- onto the stored totals, with no record of movements added by earlier loads.
CREATE TABLE IF NOT EXISTS account_balance (
    account_id INTEGER PRIMARY KEY,
    balance    DECIMAL(18,2),
    movements  BIGINT
);

INSERT INTO account_balance
SELECT account_id, SUM(amount), COUNT(*)
FROM (SELECT DISTINCT ON (event_id) * FROM ledger_batch ORDER BY event_id, _arrival_seq)
GROUP BY account_id
ON CONFLICT (account_id) DO UPDATE SET
    balance   = account_balance.balance + excluded.balance,
    movements = account_balance.movements + excluded.movements;
