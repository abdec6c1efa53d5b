-- The existing pipeline with the view filter: each load's view counts are added onto the stored
-- totals, every received row counting.
CREATE TABLE IF NOT EXISTS page_views (
    page  VARCHAR,
    day   DATE,
    views BIGINT,
    PRIMARY KEY (page, day)
);

INSERT INTO page_views
SELECT page, CAST(ts_event AS DATE) AS day, count(*) AS views
FROM clicks_batch
WHERE action = 'view'
GROUP BY page, CAST(ts_event AS DATE)
ON CONFLICT (page, day) DO UPDATE SET views = page_views.views + excluded.views;
