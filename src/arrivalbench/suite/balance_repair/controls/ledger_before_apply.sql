-- Stages the load's movements not yet applied, records their ids as applied, then adds them onto
-- the stored totals; recording and adding are separate statements with no transaction.
CREATE TABLE IF NOT EXISTS applied_movements (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS account_balance (
    account_id INTEGER PRIMARY KEY,
    balance    DECIMAL(18,2),
    movements  BIGINT
);

CREATE TEMP TABLE new_movements AS
SELECT DISTINCT ON (event_id) event_id, account_id, amount
FROM ledger_batch
WHERE event_id NOT IN (SELECT event_id FROM applied_movements)
ORDER BY event_id, _arrival_seq;

INSERT INTO applied_movements SELECT event_id FROM new_movements;

INSERT INTO account_balance
SELECT account_id, SUM(amount), COUNT(*)
FROM new_movements
GROUP BY account_id
ON CONFLICT (account_id) DO UPDATE SET
    balance   = account_balance.balance + excluded.balance,
    movements = account_balance.movements + excluded.movements;
