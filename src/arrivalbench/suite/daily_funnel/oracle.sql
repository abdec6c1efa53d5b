-- Expected daily_funnel: filtered distinct counts per day over the complete log.
SELECT CAST(ts_event AS DATE)                                        AS day,
       count(DISTINCT user_id) FILTER (WHERE action = 'view')        AS viewers,
       count(DISTINCT user_id) FILTER (WHERE action = 'add_to_cart') AS cart_users,
       count(DISTINCT user_id) FILTER (WHERE action = 'purchase')    AS purchasers,
       CAST(count(DISTINCT user_id) FILTER (WHERE action = 'purchase') AS DOUBLE)
           / nullif(count(DISTINCT user_id) FILTER (WHERE action = 'view'), 0) AS conversion
FROM clicks
GROUP BY CAST(ts_event AS DATE)
