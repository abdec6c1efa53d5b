-- Records the load as processed first, so that a load seen before is skipped; the record and the
-- merge of its events are separate statements.
CREATE TABLE IF NOT EXISTS processed_batches (batch_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS funnel_user_day (
    day           DATE,
    user_id       INTEGER,
    first_view    TIMESTAMP,
    last_purchase TIMESTAMP,
    carted        BOOLEAN,
    PRIMARY KEY (day, user_id)
);

CREATE TEMP TABLE this_batch AS
SELECT * FROM clicks_batch
WHERE _batch_id NOT IN (SELECT batch_id FROM processed_batches);

INSERT INTO processed_batches
SELECT DISTINCT _batch_id FROM clicks_batch
ON CONFLICT DO NOTHING;

INSERT INTO funnel_user_day
SELECT CAST(ts_event AS DATE), user_id,
       min(ts_event) FILTER (WHERE action = 'view'),
       max(ts_event) FILTER (WHERE action = 'purchase'),
       bool_or(action = 'add_to_cart')
FROM this_batch
GROUP BY 1, 2
ON CONFLICT (day, user_id) DO UPDATE SET
    first_view    = least(funnel_user_day.first_view, excluded.first_view),
    last_purchase = greatest(funnel_user_day.last_purchase, excluded.last_purchase),
    carted        = funnel_user_day.carted OR excluded.carted;

CREATE OR REPLACE TABLE funnel_daily AS
SELECT day,
       count(first_view)                                          AS viewers,
       count(*) FILTER (WHERE carted)                             AS cart_users,
       count(last_purchase)                                       AS purchasers,
       count(*) FILTER (WHERE last_purchase >= first_view) / nullif(count(first_view), 0)
                                                                  AS view_to_purchase
FROM funnel_user_day
GROUP BY day;
