-- dbt's microbatch strategy: each run rebuilds whole days of ordered_at, the current day and
-- `lookback` days before it, from the orders whose ordered_at falls in them (the source's
-- event_time filters it), replacing those days. A day is one order per order id, so a
-- redelivered order does not double. An order landing more than a day after the newest order
-- already processed falls before the window and is never loaded. dbt-postgres's microbatch
-- needs a unique_key (it merges each batch); dbt-duckdb's refuses one (it deletes and inserts).
{{ config(
    materialized='incremental',
    incremental_strategy='microbatch',
    unique_key=('order_id' if target.type == 'postgres' else none),
    event_time='ordered_at',
    batch_size='day',
    lookback=1,
    begin='2026-03-01'
) }}

select distinct order_id, customer_id, amount, ordered_at
from {{ source('raw', 'orders') }}
