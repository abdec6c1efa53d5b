-- Expected account_balances: one aggregate per account over the complete ledger.
SELECT account_id,
       SUM(amount)   AS balance,
       COUNT(*)      AS movements,
       MAX(ts_event) AS last_movement_at
FROM ledger
GROUP BY account_id
