-- Classic history upkeep: close each touched customer's open row at the first new change of the
-- load, then append the load's new changes, each closed by the next one within the load.
CREATE TABLE IF NOT EXISTS tier_history (
    customer_id INTEGER,
    event_id    BIGINT PRIMARY KEY,
    tier        VARCHAR,
    valid_from  TIMESTAMP,
    valid_to    TIMESTAMP,
    is_current  BOOLEAN
);

CREATE TEMP TABLE new_changes AS
SELECT DISTINCT ON (event_id) event_id, ts_event, customer_id, tier
FROM customers_batch
WHERE event_id NOT IN (SELECT event_id FROM tier_history)
ORDER BY event_id, _arrival_seq;

UPDATE tier_history AS h
SET valid_to = f.first_ts, is_current = false
FROM (SELECT customer_id, min(ts_event) AS first_ts FROM new_changes GROUP BY customer_id) AS f
WHERE h.customer_id = f.customer_id AND h.is_current;

INSERT INTO tier_history
SELECT customer_id, event_id, tier, ts_event,
       lead(ts_event) OVER w,
       lead(ts_event) OVER w IS NULL
FROM new_changes
WINDOW w AS (PARTITION BY customer_id ORDER BY ts_event, event_id);
