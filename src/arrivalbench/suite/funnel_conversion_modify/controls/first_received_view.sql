-- Stamps each user's day with the first view received and marks the user converted when a
-- purchase at or after that stamp comes in; the stamp is never moved once set.
CREATE TABLE IF NOT EXISTS funnel_user_day (
    day        DATE,
    user_id    INTEGER,
    viewed_at  TIMESTAMP,
    carted     BOOLEAN DEFAULT false,
    purchased  BOOLEAN DEFAULT false,
    converted  BOOLEAN DEFAULT false,
    PRIMARY KEY (day, user_id)
);

INSERT INTO funnel_user_day (day, user_id, viewed_at)
SELECT CAST(ts_event AS DATE), user_id, arg_min(ts_event, _arrival_seq) FILTER (WHERE action = 'view')
FROM clicks_batch
GROUP BY 1, 2
ON CONFLICT (day, user_id) DO UPDATE
SET viewed_at = coalesce(funnel_user_day.viewed_at, excluded.viewed_at);

UPDATE funnel_user_day AS t
SET carted    = t.carted OR b.carted,
    purchased = t.purchased OR b.purchased,
    converted = t.converted OR coalesce(b.last_purchase >= t.viewed_at, false)
FROM (
    SELECT CAST(ts_event AS DATE) AS day, user_id,
           bool_or(action = 'add_to_cart')                  AS carted,
           bool_or(action = 'purchase')                     AS purchased,
           max(ts_event) FILTER (WHERE action = 'purchase') AS last_purchase
    FROM clicks_batch
    GROUP BY 1, 2
) AS b
WHERE t.day = b.day AND t.user_id = b.user_id;

CREATE OR REPLACE TABLE funnel_daily AS
SELECT day,
       count(viewed_at)                      AS viewers,
       count(*) FILTER (WHERE carted)        AS cart_users,
       count(*) FILTER (WHERE purchased)     AS purchasers,
       count(*) FILTER (WHERE converted AND viewed_at IS NOT NULL) / nullif(count(viewed_at), 0)
                                             AS view_to_purchase
FROM funnel_user_day
GROUP BY day;
