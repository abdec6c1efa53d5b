-- account_balance: the balance and number of movements of every account, kept up to date by
-- adding each load's deposits and withdrawals onto the stored totals.
CREATE TABLE IF NOT EXISTS account_balance (
    account_id INTEGER PRIMARY KEY,
    balance    DECIMAL(18,2),
    movements  BIGINT
);

INSERT INTO account_balance
SELECT account_id, SUM(amount), COUNT(*)
FROM ledger_batch
WHERE kind IN ('deposit', 'withdrawal')
GROUP BY account_id
ON CONFLICT (account_id) DO UPDATE SET
    balance   = account_balance.balance + excluded.balance,
    movements = account_balance.movements + excluded.movements;
