-- Applies each event once (a ledger of event ids, one transaction per load) and walks each user's
-- day in the order events were received: converted when a purchase was received after the first
-- view received.
CREATE TABLE IF NOT EXISTS seen_clicks (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS funnel_user_day (
    day               DATE,
    user_id           INTEGER,
    first_view_seq    BIGINT,
    last_purchase_seq BIGINT,
    carted            BOOLEAN,
    PRIMARY KEY (day, user_id)
);

BEGIN TRANSACTION;

CREATE TEMP TABLE fresh AS
SELECT DISTINCT ON (event_id) *
FROM clicks_batch
WHERE event_id NOT IN (SELECT event_id FROM seen_clicks)
ORDER BY event_id, _arrival_seq;

INSERT INTO seen_clicks SELECT event_id FROM fresh;

INSERT INTO funnel_user_day
SELECT CAST(ts_event AS DATE), user_id,
       min(_arrival_seq) FILTER (WHERE action = 'view'),
       max(_arrival_seq) FILTER (WHERE action = 'purchase'),
       bool_or(action = 'add_to_cart')
FROM fresh
GROUP BY 1, 2
ON CONFLICT (day, user_id) DO UPDATE SET
    first_view_seq    = coalesce(funnel_user_day.first_view_seq, excluded.first_view_seq),
    last_purchase_seq = greatest(funnel_user_day.last_purchase_seq, excluded.last_purchase_seq),
    carted            = funnel_user_day.carted OR excluded.carted;

COMMIT;

CREATE OR REPLACE TABLE funnel_daily AS
SELECT day,
       count(first_view_seq)                   AS viewers,
       count(*) FILTER (WHERE carted)          AS cart_users,
       count(last_purchase_seq)                AS purchasers,
       count(*) FILTER (WHERE last_purchase_seq > first_view_seq) / nullif(count(first_view_seq), 0)
                                               AS view_to_purchase
FROM funnel_user_day
GROUP BY day;
