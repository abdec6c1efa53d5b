-- Expected page_users: a distinct count and a filtered count per page and day over the complete log.
SELECT page,
       CAST(ts_event AS DATE)                  AS day,
       count(DISTINCT user_id)                 AS users,
       count(*) FILTER (WHERE action = 'view') AS views
FROM clicks
GROUP BY page, CAST(ts_event AS DATE)
