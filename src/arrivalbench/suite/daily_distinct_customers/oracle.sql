-- Expected store_daily_customers: customers counted from the distinct (store, day, customer)
-- triples (an order without a customer_id adds no customer), revenue summed separately over all
-- orders, the two joined on (store, day).
WITH visits AS (
    SELECT DISTINCT store_id, CAST(ts_event AS DATE) AS day, customer_id
    FROM sales
),
counts AS (
    SELECT store_id, day, COUNT(customer_id) AS customers
    FROM visits
    GROUP BY store_id, day
),
money AS (
    SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount) AS revenue
    FROM sales
    GROUP BY 1, 2
)
SELECT c.store_id, c.day, c.customers, m.revenue
FROM counts c
JOIN money m ON m.store_id = c.store_id AND m.day = c.day
