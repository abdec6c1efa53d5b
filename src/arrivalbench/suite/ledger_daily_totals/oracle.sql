-- Expected ledger_daily_totals: one conditional aggregate per account and day over the complete ledger.
SELECT account_id,
       CAST(ts_event AS DATE)                                       AS day,
       coalesce(SUM(amount) FILTER (WHERE kind = 'deposit'), 0)     AS deposits,
       coalesce(-SUM(amount) FILTER (WHERE kind = 'withdrawal'), 0) AS withdrawals,
       coalesce(-SUM(amount) FILTER (WHERE kind = 'fee'), 0)        AS fees,
       COUNT(*)                                                     AS movements
FROM ledger
GROUP BY account_id, CAST(ts_event AS DATE)
