-- page_users: distinct users per page, counted from the set of (page, user) pairs seen so far.
CREATE TABLE IF NOT EXISTS page_user_seen (
    page    VARCHAR,
    user_id INTEGER,
    PRIMARY KEY (page, user_id)
);

INSERT OR IGNORE INTO page_user_seen
SELECT DISTINCT page, user_id
FROM clicks_batch;

CREATE OR REPLACE TABLE page_users AS
SELECT page, count(*) AS users
FROM page_user_seen
GROUP BY page;
