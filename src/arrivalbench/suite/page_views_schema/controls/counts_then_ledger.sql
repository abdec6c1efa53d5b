-- Adds each load's new views to running counts per page and day, then records the counted event
-- ids in a separate statement; a missing page column is padded with NULL first.
CREATE TABLE IF NOT EXISTS counted_events (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS page_daily_views (
    page  VARCHAR,
    day   DATE,
    views BIGINT,
    PRIMARY KEY (page, day)
);

CREATE TEMP TABLE new_events AS
SELECT DISTINCT ON (event_id) event_id, ts_event, page, action
FROM (
    SELECT NULL::VARCHAR AS page WHERE false
    UNION ALL BY NAME
    SELECT * FROM clicks_batch
) AS padded
WHERE event_id NOT IN (SELECT event_id FROM counted_events)
ORDER BY event_id;

INSERT INTO page_daily_views
SELECT coalesce(page, 'unknown'), CAST(ts_event AS DATE), count(*)
FROM new_events
WHERE action = 'view'
GROUP BY ALL
ON CONFLICT (page, day) DO UPDATE SET views = page_daily_views.views + excluded.views;

INSERT INTO counted_events SELECT event_id FROM new_events;
