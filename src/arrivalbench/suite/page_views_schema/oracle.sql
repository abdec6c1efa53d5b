-- Expected page_daily_views: a filtered count over the complete log, a missing page as 'unknown'.
SELECT coalesce(page, 'unknown') AS page,
       CAST(ts_event AS DATE)    AS day,
       count(*)                  AS views
FROM clicks
WHERE action = 'view'
GROUP BY coalesce(page, 'unknown'), CAST(ts_event AS DATE)
