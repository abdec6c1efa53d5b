-- Records the load as processed first, so that a load seen before is skipped; the record and the
-- storing of its (day, user, action) rows are separate statements.
CREATE TABLE IF NOT EXISTS processed_batches (batch_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS funnel_seen (
    day     DATE,
    user_id INTEGER,
    action  VARCHAR,
    PRIMARY KEY (day, user_id, action)
);

CREATE TEMP TABLE this_batch AS
SELECT * FROM clicks_batch
WHERE _batch_id NOT IN (SELECT batch_id FROM processed_batches);

INSERT INTO processed_batches
SELECT DISTINCT _batch_id FROM clicks_batch
ON CONFLICT DO NOTHING;

INSERT INTO funnel_seen
SELECT DISTINCT CAST(ts_event AS DATE), user_id, action
FROM this_batch
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
