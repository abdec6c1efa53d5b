-- Expected daily_active_users: a distinct count and a row count per day over the complete log.
SELECT CAST(ts_event AS DATE)   AS day,
       count(DISTINCT user_id)  AS active_users,
       count(*)                 AS events
FROM clicks
GROUP BY CAST(ts_event AS DATE)
