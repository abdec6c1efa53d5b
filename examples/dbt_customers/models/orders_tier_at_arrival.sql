-- Enrich each order once, when it arrives: the new orders (by the loader's _loaded_at, one row
-- per order, upserted on the order id) take the tier in effect when they were placed, among the
-- customer changes loaded so far. Right when customers always land before their orders; an
-- order that arrives before its customer's change is enriched with the old tier (or none) and
-- never revisited when the change lands.
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
select order_id, customer_id, amount, ordered_at,
       (select c.tier from {{ source('raw', 'customers') }} c
        where c.customer_id = ranked.customer_id and c.effective_at <= ranked.ordered_at
        order by c.effective_at desc, c.change_id desc
        limit 1) as tier,
       _loaded_at
from ranked
where arrival_rank = 1
