-- Rule control: the gold, except that a page-day without views gets NULL views (the text says 0).
CREATE TABLE IF NOT EXISTS page_day_user (
    page    VARCHAR,
    day     DATE,
    user_id INTEGER,
    PRIMARY KEY (page, day, user_id)
);

CREATE TABLE IF NOT EXISTS page_view_ids (
    event_id BIGINT PRIMARY KEY,
    page     VARCHAR,
    day      DATE
);

INSERT OR IGNORE INTO page_day_user
SELECT DISTINCT page, CAST(ts_event AS DATE), user_id
FROM clicks_batch;

INSERT OR IGNORE INTO page_view_ids
SELECT DISTINCT event_id, page, CAST(ts_event AS DATE)
FROM clicks_batch
WHERE action = 'view';

CREATE OR REPLACE TABLE page_users AS
SELECT u.page, u.day, u.users, v.views AS views
FROM (SELECT page, day, count(*) AS users FROM page_day_user GROUP BY page, day) AS u
LEFT JOIN (SELECT page, day, count(*) AS views FROM page_view_ids GROUP BY page, day) AS v
  ON v.page = u.page AND v.day = u.day;
