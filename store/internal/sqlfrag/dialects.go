package sqlfrag

// Dialect is one SQL dialect's fragment language: the names a fragment may
// use and the syntax it admits. Its fields are read-only once built; the
// two dialects Quarry has are Postgres and MariaDB.
type Dialect struct {
	// Name is the raw filter's store tag, used in messages.
	Name string
	// Columns are the row's columns a fragment may name, lower case.
	Columns map[string]bool
	// Functions are the pure functions a fragment may call, by lower-case
	// name, with how many arguments each takes.
	Functions map[string]arity
	// Types are the cast targets, lower case with single spaces
	// ("double precision"), mapped to how they print.
	Types map[string]string
	// IntervalUnits are MariaDB's INTERVAL expr UNIT units; none means
	// the dialect writes INTERVAL 'text' (PostgreSQL).
	IntervalUnits map[string]bool
	// ExtractFields are the fields EXTRACT(field FROM x) takes.
	ExtractFields map[string]bool
	// Operators beyond the common ones (= <> != < <= > >= + - * / %) that
	// the dialect admits: "::", "ilike", "array", "distinct", "<=>",
	// "div", "mod", and the JSON operators "->", "->>", "#>", "#>>", "@>",
	// "<@", "?", "?|", "?&", "@?", "@@", "||".
	Operators map[string]bool
	// QuotedIdents admits "column" for a column on the list (PostgreSQL).
	QuotedIdents bool
	// EscapeStrings admits E'...' strings with backslash escapes
	// (PostgreSQL); a plain string's backslash is then an ordinary
	// character, as the SQL standard has it. Without it a backslash in a
	// string is refused, since its meaning depends on the server's mode
	// (MariaDB's NO_BACKSLASH_ESCAPES).
	EscapeStrings bool
	// BindStrings passes string literals as bound parameters instead of
	// printing them (MariaDB, whose string syntax depends on the mode).
	BindStrings bool
}

// arity is how many arguments a function takes; max -1 is any number up to
// maxArgs.
type arity struct{ min, max int }

const maxArgs = 32

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// columns are the row's columns in both dialects: the documents table's
// own, which every store query selects from.
var columns = []string{"id", "content", "source_type", "source_name", "metadata"}

// Postgres is the fragment language of the PostgreSQL store.
var Postgres = &Dialect{
	Name:    "postgres",
	Columns: set(columns...),
	Functions: map[string]arity{
		// text
		"lower": {1, 1}, "upper": {1, 1}, "length": {1, 1}, "char_length": {1, 1}, "character_length": {1, 1},
		"octet_length": {1, 1}, "btrim": {1, 2}, "ltrim": {1, 2}, "rtrim": {1, 2}, "trim": {1, 1},
		"substr": {2, 3}, "left": {2, 2}, "right": {2, 2}, "replace": {3, 3}, "strpos": {2, 2},
		"starts_with": {2, 2}, "concat": {1, -1}, "concat_ws": {2, -1}, "initcap": {1, 1}, "reverse": {1, 1},
		"split_part": {3, 3}, "translate": {3, 3},
		// conditional
		"coalesce": {1, -1}, "nullif": {2, 2}, "greatest": {1, -1}, "least": {1, -1},
		// arithmetic
		"abs": {1, 1}, "round": {1, 2}, "floor": {1, 1}, "ceil": {1, 1}, "ceiling": {1, 1}, "trunc": {1, 2},
		"sign": {1, 1}, "mod": {2, 2}, "sqrt": {1, 1}, "ln": {1, 1}, "log": {1, 2}, "exp": {1, 1},
		// dates
		"now": {0, 0}, "date_trunc": {2, 3}, "date_part": {2, 2}, "to_timestamp": {1, 2}, "to_date": {2, 2},
		"to_char": {2, 2}, "make_date": {3, 3}, "age": {1, 2},
		// JSON
		"jsonb_typeof": {1, 1}, "jsonb_array_length": {1, 1}, "jsonb_extract_path": {2, -1},
		"jsonb_extract_path_text": {2, -1}, "jsonb_path_exists": {2, 2}, "jsonb_path_match": {2, 2},
		"jsonb_build_array": {0, -1}, "jsonb_build_object": {0, -1}, "to_jsonb": {1, 1},
		// arrays
		"array_length": {2, 2}, "cardinality": {1, 1},
		// text search
		"to_tsvector": {1, 2}, "plainto_tsquery": {1, 2}, "websearch_to_tsquery": {1, 2}, "phraseto_tsquery": {1, 2},
	},
	Types: map[string]string{
		"text": "text", "varchar": "varchar", "character varying": "varchar", "char": "char", "character": "char",
		"integer": "integer", "int": "integer", "int4": "integer", "smallint": "smallint", "int2": "smallint",
		"bigint": "bigint", "int8": "bigint", "numeric": "numeric", "decimal": "numeric", "real": "real",
		"float4": "real", "float": "double precision", "float8": "double precision", "double precision": "double precision",
		"boolean": "boolean", "bool": "boolean", "date": "date", "time": "time", "timestamp": "timestamp",
		"timestamp without time zone": "timestamp", "timestamptz": "timestamptz", "timestamp with time zone": "timestamptz",
		"interval": "interval", "json": "json", "jsonb": "jsonb", "jsonpath": "jsonpath", "regconfig": "regconfig",
	},
	ExtractFields: set("year", "month", "day", "hour", "minute", "second", "epoch", "dow", "doy", "week", "quarter",
		"isodow", "isoyear", "century", "decade", "millennium", "milliseconds", "microseconds"),
	Operators:     set("::", "ilike", "array", "distinct", "->", "->>", "#>", "#>>", "@>", "<@", "?", "?|", "?&", "@?", "@@", "||"),
	QuotedIdents:  true,
	EscapeStrings: true,
}

// MariaDB is the fragment language of the MariaDB store.
var MariaDB = &Dialect{
	Name:    "mariadb",
	Columns: set(columns...),
	Functions: map[string]arity{
		// text
		"lower": {1, 1}, "lcase": {1, 1}, "upper": {1, 1}, "ucase": {1, 1}, "length": {1, 1},
		"char_length": {1, 1}, "character_length": {1, 1}, "trim": {1, 1}, "ltrim": {1, 1}, "rtrim": {1, 1},
		"substring": {2, 3}, "substr": {2, 3}, "left": {2, 2}, "right": {2, 2}, "replace": {3, 3},
		"concat": {1, -1}, "concat_ws": {2, -1}, "locate": {2, 3}, "instr": {2, 2}, "reverse": {1, 1},
		// conditional
		"coalesce": {1, -1}, "ifnull": {2, 2}, "nullif": {2, 2}, "if": {3, 3}, "greatest": {2, -1}, "least": {2, -1},
		// arithmetic
		"abs": {1, 1}, "round": {1, 2}, "floor": {1, 1}, "ceil": {1, 1}, "ceiling": {1, 1}, "truncate": {2, 2},
		"sign": {1, 1}, "mod": {2, 2}, "sqrt": {1, 1}, "ln": {1, 1}, "log": {1, 2}, "exp": {1, 1},
		// dates
		"now": {0, 0}, "curdate": {0, 0}, "utc_timestamp": {0, 0}, "date": {1, 1}, "year": {1, 1},
		"month": {1, 1}, "day": {1, 1}, "dayofmonth": {1, 1}, "hour": {1, 1}, "datediff": {2, 2},
		"date_add": {2, 2}, "date_sub": {2, 2}, "unix_timestamp": {0, 1}, "from_unixtime": {1, 2},
		"str_to_date": {2, 2}, "date_format": {2, 2},
		// JSON
		"json_value": {2, 2}, "json_extract": {2, -1}, "json_unquote": {1, 1}, "json_contains": {2, 3},
		"json_contains_path": {3, -1}, "json_length": {1, 2}, "json_type": {1, 1}, "json_overlaps": {2, 2},
		"json_query": {2, 2}, "json_exists": {2, 2}, "json_array": {0, -1},
	},
	Types: map[string]string{
		"signed": "SIGNED", "signed integer": "SIGNED", "unsigned": "UNSIGNED", "unsigned integer": "UNSIGNED",
		"integer": "INTEGER", "int": "INTEGER", "decimal": "DECIMAL", "double": "DOUBLE", "float": "FLOAT",
		"char": "CHAR", "date": "DATE", "datetime": "DATETIME", "time": "TIME",
	},
	IntervalUnits: set("microsecond", "second", "minute", "hour", "day", "week", "month", "quarter", "year"),
	ExtractFields: set("year", "month", "day", "hour", "minute", "second", "week", "quarter"),
	Operators:     set("<=>", "div", "mod"),
	BindStrings:   true,
}
