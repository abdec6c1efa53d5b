-- Rule control: the gold, except that a viewer with any purchase that day converted, even one
-- before their earliest view (the text says at or after it).
CREATE TABLE IF NOT EXISTS funnel_user_day (
    day           DATE,
    user_id       INTEGER,
    first_view    TIMESTAMP,
    last_purchase TIMESTAMP,
    carted        BOOLEAN,
    PRIMARY KEY (day, user_id)
);

MERGE INTO funnel_user_day AS t
USING (
    SELECT CAST(ts_event AS DATE)                          AS day,
           user_id,
           min(ts_event) FILTER (WHERE action = 'view')     AS first_view,
           max(ts_event) FILTER (WHERE action = 'purchase') AS last_purchase,
           bool_or(action = 'add_to_cart')                  AS carted
    FROM clicks_batch
    GROUP BY 1, 2
) AS b
ON t.day = b.day AND t.user_id = b.user_id
WHEN MATCHED THEN UPDATE SET
    first_view    = least(t.first_view, b.first_view),
    last_purchase = greatest(t.last_purchase, b.last_purchase),
    carted        = t.carted OR b.carted
WHEN NOT MATCHED THEN INSERT (day, user_id, first_view, last_purchase, carted)
    VALUES (b.day, b.user_id, b.first_view, b.last_purchase, b.carted);

CREATE OR REPLACE TABLE funnel_daily AS
SELECT day,
       count(first_view)                                  AS viewers,
       count(*) FILTER (WHERE carted)                     AS cart_users,
       count(last_purchase)                               AS purchasers,
       CASE WHEN count(first_view) = 0 THEN NULL
            ELSE count(*) FILTER (WHERE last_purchase IS NOT NULL AND first_view IS NOT NULL) / count(first_view)
       END                                                AS view_to_purchase
FROM funnel_user_day
GROUP BY day;
