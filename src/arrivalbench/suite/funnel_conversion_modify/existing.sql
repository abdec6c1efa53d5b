-- funnel_daily: distinct viewers and purchasers per day, counted from the set of
-- (day, user, action) combinations seen so far.
CREATE TABLE IF NOT EXISTS funnel_seen (
    day     DATE,
    user_id INTEGER,
    action  VARCHAR,
    PRIMARY KEY (day, user_id, action)
);

INSERT OR IGNORE INTO funnel_seen
SELECT DISTINCT CAST(ts_event AS DATE), user_id, action
FROM clicks_batch;

CREATE OR REPLACE TABLE funnel_daily AS
SELECT day,
       count(*) FILTER (WHERE action = 'view')     AS viewers,
       count(*) FILTER (WHERE action = 'purchase') AS purchasers
FROM funnel_seen
GROUP BY day;
