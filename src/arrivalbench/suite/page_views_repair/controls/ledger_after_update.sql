-- Adds each load's new view events onto the stored totals, then records the event ids it has
-- applied; the two steps are separate statements, so stopping between them applies the load
-- again on the rerun.
CREATE TABLE IF NOT EXISTS applied_views (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS page_views (
    page  VARCHAR,
    day   DATE,
    views BIGINT,
    PRIMARY KEY (page, day)
);

INSERT INTO page_views
SELECT page, CAST(ts_event AS DATE), count(*)
FROM (
    SELECT DISTINCT ON (event_id) *
    FROM clicks_batch
    WHERE action = 'view' AND event_id NOT IN (SELECT event_id FROM applied_views)
)
GROUP BY ALL
ON CONFLICT (page, day) DO UPDATE SET views = page_views.views + excluded.views;

INSERT INTO applied_views
SELECT DISTINCT event_id FROM clicks_batch WHERE action = 'view'
ON CONFLICT DO NOTHING;
