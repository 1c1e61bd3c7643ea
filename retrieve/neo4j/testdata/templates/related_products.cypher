// description: Products related to a named product, with why they are related
// param: name string required the product's name, as the user wrote it
// param: limit integer how many related products (1 to 25, default 5)
// text: description
// id: id
// source: name
// metadata: category
MATCH (p:Product {name: $name})-[r:RELATED_TO]->(q:Product)
RETURN q.id AS id, q.name AS name, q.name + ': ' + q.description + ' (' + r.reason + ')' AS description, q.category AS category
LIMIT coalesce($limit, 5)
