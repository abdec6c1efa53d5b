-- Extends the (page, user) set with the day and adds each load's view count onto a stored
-- counter per page and day, every received row counting.
CREATE TABLE IF NOT EXISTS page_day_user (
    page    VARCHAR,
    day     DATE,
    user_id INTEGER,
    PRIMARY KEY (page, day, user_id)
);

CREATE TABLE IF NOT EXISTS page_day_views (
    page  VARCHAR,
    day   DATE,
    views BIGINT,
    PRIMARY KEY (page, day)
);

INSERT OR IGNORE INTO page_day_user
SELECT DISTINCT page, CAST(ts_event AS DATE), user_id
FROM clicks_batch;

INSERT INTO page_day_views
SELECT page, CAST(ts_event AS DATE), count(*) FILTER (WHERE action = 'view')
FROM clicks_batch
GROUP BY 1, 2
ON CONFLICT (page, day) DO UPDATE SET views = page_day_views.views + excluded.views;

CREATE OR REPLACE TABLE page_users AS
SELECT u.page, u.day, count(*) AS users, any_value(v.views) AS views
FROM page_day_user u
JOIN page_day_views v ON v.page = u.page AND v.day = u.day
GROUP BY u.page, u.day;
