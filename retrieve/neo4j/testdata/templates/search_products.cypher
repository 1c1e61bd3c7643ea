// description: Products whose name or description mention the question's words (full-text index)
// param: query string required what to look for
// param: limit integer how many products (default 10)
// text: text
// id: id
// source: name
// metadata: category
CALL db.index.fulltext.queryNodes('product_text', $query) YIELD node, score
RETURN node.id AS id, node.name AS name, node.name + ': ' + node.description AS text, node.category AS category, score
ORDER BY score DESC
LIMIT coalesce($limit, 10)
