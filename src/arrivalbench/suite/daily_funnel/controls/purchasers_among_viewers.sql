-- Rule control: the gold, except that only users who also viewed that day count as purchasers
-- (the text says a purchaser counts even without a 'view' that day).
CREATE TABLE IF NOT EXISTS funnel_seen (
    day     DATE,
    user_id INTEGER,
    action  VARCHAR,
    PRIMARY KEY (day, user_id, action)
);

INSERT INTO funnel_seen
SELECT DISTINCT CAST(ts_event AS DATE), user_id, action
FROM clicks_batch
ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS daily_funnel (
    day        DATE PRIMARY KEY,
    viewers    BIGINT,
    cart_users BIGINT,
    purchasers BIGINT,
    conversion DOUBLE
);

BEGIN TRANSACTION;

DELETE FROM daily_funnel
WHERE day IN (SELECT CAST(ts_event AS DATE) FROM clicks_batch);

INSERT INTO daily_funnel
SELECT day, viewers, cart_users, purchasers,
       CASE WHEN viewers = 0 THEN NULL ELSE purchasers / viewers END
FROM (
    SELECT day,
           sum(CASE WHEN action = 'view' THEN 1 ELSE 0 END)        AS viewers,
           sum(CASE WHEN action = 'add_to_cart' THEN 1 ELSE 0 END) AS cart_users,
           sum(CASE WHEN action = 'purchase' AND (day, user_id) IN (
                    SELECT day, user_id FROM funnel_seen WHERE action = 'view')
                    THEN 1 ELSE 0 END)    AS purchasers
    FROM funnel_seen
    WHERE day IN (SELECT CAST(ts_event AS DATE) FROM clicks_batch)
    GROUP BY day
);

COMMIT;
