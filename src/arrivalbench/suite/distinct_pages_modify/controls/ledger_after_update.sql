-- Adds each load's new view events onto stored counters, then records the event ids it has
-- applied (separate statements, so stopping between them applies the load again on the rerun),
-- then adds to the (page, day, user) set.
CREATE TABLE IF NOT EXISTS page_day_user (
    page    VARCHAR,
    day     DATE,
    user_id INTEGER,
    PRIMARY KEY (page, day, user_id)
);

CREATE TABLE IF NOT EXISTS applied_clicks (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS page_day_views (
    page  VARCHAR,
    day   DATE,
    views BIGINT,
    PRIMARY KEY (page, day)
);

INSERT INTO page_day_views
SELECT page, CAST(ts_event AS DATE), count(*) FILTER (WHERE action = 'view')
FROM (
    SELECT DISTINCT ON (event_id) *
    FROM clicks_batch
    WHERE event_id NOT IN (SELECT event_id FROM applied_clicks)
)
GROUP BY 1, 2
ON CONFLICT (page, day) DO UPDATE SET views = page_day_views.views + excluded.views;

INSERT INTO applied_clicks
SELECT DISTINCT event_id FROM clicks_batch
ON CONFLICT DO NOTHING;

INSERT OR IGNORE INTO page_day_user
SELECT DISTINCT page, CAST(ts_event AS DATE), user_id
FROM clicks_batch;

CREATE OR REPLACE TABLE page_users AS
SELECT u.page, u.day, count(*) AS users, any_value(v.views) AS views
FROM page_day_user u
JOIN page_day_views v ON v.page = u.page AND v.day = u.day
GROUP BY u.page, u.day;
