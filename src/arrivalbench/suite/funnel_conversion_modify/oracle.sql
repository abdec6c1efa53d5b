-- Expected funnel_daily: distinct counts per day, and the viewers who have some purchase at or
-- after some view of theirs that day (equivalently: at or after their earliest view), by a join.
WITH counts AS (
    SELECT CAST(ts_event AS DATE)                                        AS day,
           count(DISTINCT user_id) FILTER (WHERE action = 'view')        AS viewers,
           count(DISTINCT user_id) FILTER (WHERE action = 'add_to_cart') AS cart_users,
           count(DISTINCT user_id) FILTER (WHERE action = 'purchase')    AS purchasers
    FROM clicks
    GROUP BY 1
),
converted AS (
    SELECT CAST(v.ts_event AS DATE) AS day, count(DISTINCT v.user_id) AS n
    FROM clicks v
    JOIN clicks p
      ON p.user_id = v.user_id
     AND CAST(p.ts_event AS DATE) = CAST(v.ts_event AS DATE)
     AND p.ts_event >= v.ts_event
    WHERE v.action = 'view' AND p.action = 'purchase'
    GROUP BY 1
)
SELECT c.day, c.viewers, c.cart_users, c.purchasers,
       CAST(coalesce(k.n, 0) AS DOUBLE) / nullif(c.viewers, 0) AS view_to_purchase
FROM counts c
LEFT JOIN converted k USING (day)
