-- Treats every day before the newest day already stored as closed: only events on or after that
-- day are added to the (day, user, action) set the funnel is counted from.
CREATE TABLE IF NOT EXISTS funnel_seen (
    day     DATE,
    user_id INTEGER,
    action  VARCHAR,
    PRIMARY KEY (day, user_id, action)
);

INSERT INTO funnel_seen
SELECT DISTINCT CAST(ts_event AS DATE), user_id, action
FROM clicks_batch
WHERE CAST(ts_event AS DATE) >= (SELECT coalesce(max(day), DATE '1900-01-01') FROM funnel_seen)
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE daily_funnel AS
SELECT day,
       count(*) FILTER (WHERE action = 'view')        AS viewers,
       count(*) FILTER (WHERE action = 'add_to_cart') AS cart_users,
       count(*) FILTER (WHERE action = 'purchase')    AS purchasers,
       CAST(count(*) FILTER (WHERE action = 'purchase') AS DOUBLE)
           / nullif(count(*) FILTER (WHERE action = 'view'), 0) AS conversion
FROM funnel_seen
GROUP BY day;
