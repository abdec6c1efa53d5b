-- Expected first_purchase: the earliest time per customer, the smallest event id at that time,
-- and the count of distinct purchase dates, each found by a separate aggregate and joined back.
WITH earliest AS (
    SELECT customer_id, min(ts_event) AS first_ts, count(DISTINCT CAST(ts_event AS DATE)) AS n_days
    FROM sales
    GROUP BY customer_id
),
first_event AS (
    SELECT s.customer_id, min(s.event_id) AS event_id
    FROM sales s
    JOIN earliest e ON e.customer_id = s.customer_id AND e.first_ts = s.ts_event
    GROUP BY s.customer_id
)
SELECT e.customer_id,
       e.first_ts  AS first_purchase_at,
       s.store_id  AS first_store_id,
       e.n_days    AS purchase_days
FROM earliest e
JOIN first_event f ON f.customer_id = e.customer_id
JOIN sales s ON s.event_id = f.event_id
