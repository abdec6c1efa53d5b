-- PostgreSQL form of first_received_view.sql: sqlglot's transpile, with DuckDB's arg_min(ts_event,
-- _arrival_seq) FILTER (view) written as the first element of an ordered array_agg.
/* Stamps each user's day with the first view received and marks the user converted when a */
/* purchase at or after that stamp comes in; the stamp is never moved once set. */
CREATE TABLE IF NOT EXISTS funnel_user_day (
  day DATE,
  user_id INT,
  viewed_at TIMESTAMP,
  carted BOOLEAN DEFAULT FALSE,
  purchased BOOLEAN DEFAULT FALSE,
  converted BOOLEAN DEFAULT FALSE,
  PRIMARY KEY (day, user_id)
);
INSERT INTO funnel_user_day (
  day,
  user_id,
  viewed_at
)
SELECT
  CAST(ts_event AS DATE),
  user_id,
  (ARRAY_AGG(ts_event ORDER BY _arrival_seq) FILTER(WHERE
    action = 'view'))[1]
FROM clicks_batch
GROUP BY
  1,
  2 ON CONFLICT(day, user_id) DO UPDATE SET viewed_at = COALESCE(funnel_user_day.viewed_at, excluded.viewed_at);
UPDATE funnel_user_day AS t SET carted = t.carted OR b.carted, purchased = t.purchased OR b.purchased, converted = t.converted OR COALESCE(b.last_purchase >= t.viewed_at, FALSE)
FROM (
  SELECT
    CAST(ts_event AS DATE) AS day,
    user_id,
    BOOL_OR(CAST(action = 'add_to_cart' AS BOOLEAN)) AS carted,
    BOOL_OR(CAST(action = 'purchase' AS BOOLEAN)) AS purchased,
    MAX(ts_event) FILTER(WHERE
      action = 'purchase') AS last_purchase
  FROM clicks_batch
  GROUP BY
    1,
    2
) AS b
WHERE
  t.day = b.day AND t.user_id = b.user_id;
BEGIN;
DROP TABLE IF EXISTS funnel_daily;
CREATE TABLE funnel_daily AS
SELECT
  day,
  COUNT(viewed_at) AS viewers,
  COUNT(*) FILTER(WHERE
    carted) AS cart_users,
  COUNT(*) FILTER(WHERE
    purchased) AS purchasers,
  CAST(COUNT(*) FILTER(WHERE
    converted AND NOT viewed_at IS NULL) AS DOUBLE PRECISION) / NULLIF(COUNT(viewed_at), 0) AS view_to_purchase
FROM funnel_user_day
GROUP BY
  day;
COMMIT;
