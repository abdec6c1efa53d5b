-- page_views: page views per page and day; each load's counts are added onto the stored totals.
CREATE TABLE IF NOT EXISTS page_views (
    page  VARCHAR,
    day   DATE,
    views BIGINT,
    PRIMARY KEY (page, day)
);

INSERT INTO page_views
SELECT page, CAST(ts_event AS DATE) AS day, count(*) AS views
FROM clicks_batch
GROUP BY page, CAST(ts_event AS DATE)
ON CONFLICT (page, day) DO UPDATE SET views = page_views.views + excluded.views;
