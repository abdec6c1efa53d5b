-- Expected account_balance: deposits, withdrawals and fees summed separately per account and
-- combined, so the total does not depend on a single signed SUM.
SELECT account_id,
       SUM(CASE WHEN kind = 'deposit' THEN amount ELSE 0 END)
         + SUM(CASE WHEN kind = 'withdrawal' THEN amount ELSE 0 END)
         + SUM(CASE WHEN kind = 'fee' THEN amount ELSE 0 END)          AS balance,
       COUNT(event_id)                                                  AS movements
FROM ledger
GROUP BY account_id
