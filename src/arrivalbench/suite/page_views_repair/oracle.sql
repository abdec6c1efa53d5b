-- Expected page_views: view events counted per page and day over the complete log.
SELECT page, CAST(ts_event AS DATE) AS day, count(*) AS views
FROM clicks
WHERE action = 'view'
GROUP BY page, CAST(ts_event AS DATE)
