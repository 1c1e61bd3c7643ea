WITH v AS (SELECT id, 1 - d AS s FROM (SELECT id, embedding::vector(384) <=> $2::vector(384) AS d FROM quarry_documents WHERE collection_id = 7 AND (metadata->'tenant' = $3::text::jsonb AND ((jsonb_typeof(metadata->'year') = 'number' AND metadata->'year' >= $4::text::jsonb) OR (jsonb_typeof(metadata->'tags') = 'array' AND metadata->'tags' ?| $5::text[])))
			ORDER BY embedding::vector(384) <=> $2::vector(384) LIMIT 20) v0),
		k AS (SELECT id, pdb.score(search_id) AS s FROM quarry_documents
			WHERE content ||| $1 AND collection_id = 7 AND (metadata->'tenant' = $3::text::jsonb AND ((jsonb_typeof(metadata->'year') = 'number' AND metadata->'year' >= $4::text::jsonb) OR (jsonb_typeof(metadata->'tags') = 'array' AND metadata->'tags' ?| $5::text[]))) ORDER BY s DESC, id LIMIT 20)
		SELECT 'v', id, s FROM v UNION ALL SELECT 'k', id, s FROM k
