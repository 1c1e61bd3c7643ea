SELECT id, content, source_type, source_name, metadata::text, embedding, provenance::text, pdb.score(search_id) AS score
		FROM quarry_documents WHERE content ||| $1 AND collection_id = 7 AND (metadata->'tenant' = $2::text::jsonb AND ((jsonb_typeof(metadata->'year') = 'number' AND metadata->'year' >= $3::text::jsonb) OR (jsonb_typeof(metadata->'tags') = 'array' AND metadata->'tags' ?| $4::text[])))
		ORDER BY score DESC, id LIMIT 10
