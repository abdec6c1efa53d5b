-- Stores the clicks newer than the newest one already stored (the feed's usual incremental
-- filter) and recomputes the day funnel from everything stored.
CREATE TABLE IF NOT EXISTS clicks_seen (
    event_id BIGINT PRIMARY KEY,
    ts_event TIMESTAMP,
    user_id  INTEGER,
    action   VARCHAR
);

INSERT OR IGNORE INTO clicks_seen
SELECT event_id, ts_event, user_id, action
FROM clicks_batch
WHERE ts_event > (SELECT coalesce(max(ts_event), TIMESTAMP '1970-01-01') FROM clicks_seen)
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1;

CREATE OR REPLACE TABLE funnel_daily AS
WITH user_day AS (
    SELECT CAST(ts_event AS DATE) AS day, user_id,
           min(ts_event) FILTER (WHERE action = 'view')     AS first_view,
           max(ts_event) FILTER (WHERE action = 'purchase') AS last_purchase,
           bool_or(action = 'add_to_cart')                  AS carted
    FROM clicks_seen
    GROUP BY 1, 2
)
SELECT day,
       count(first_view)                             AS viewers,
       count(*) FILTER (WHERE carted)                AS cart_users,
       count(last_purchase)                          AS purchasers,
       count(*) FILTER (WHERE last_purchase >= first_view) / nullif(count(first_view), 0)
                                                     AS view_to_purchase
FROM user_day
GROUP BY day;
