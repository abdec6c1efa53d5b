-- The fix: select by arrival (the loader's _loaded_at), not by event time, so a late order is
-- still new when it lands; keep one row per order of what arrived, and upsert on the order id,
-- so a redelivered order replaces itself instead of doubling. Portable SQL (no QUALIFY): the
-- same model runs on DuckDB and on PostgreSQL.
{{ config(materialized='incremental', unique_key='order_id') }}

with arrived as (
    select order_id, customer_id, amount, ordered_at, _loaded_at
    from {{ source('raw', 'orders') }}
    {% if is_incremental() %}
    where _loaded_at > (select max(_loaded_at) from {{ this }})
    {% endif %}
),
ranked as (
    select arrived.*, row_number() over (partition by order_id order by _loaded_at) as arrival_rank
    from arrived
)
select order_id, customer_id, amount, ordered_at, _loaded_at
from ranked
where arrival_rank = 1
