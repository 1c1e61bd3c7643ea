package mongotest

import (
	"reflect"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// match reports whether a document matches an MQL query: $and, $or,
// $nor, and per field a value (equality) or $eq, $ne, $gt, $gte, $lt,
// $lte, $in, $nin, $exists and $not. As in MongoDB, equality on an array
// holds when an element is equal, and $ne and $nin hold for a document
// without the field.
func match(d bson.D, q bson.D) bool {
	for _, e := range q {
		switch e.Key {
		case "$and", "$or", "$nor":
			subs, _ := e.Value.(bson.A)
			any := false
			every := true
			for _, x := range subs {
				sq, _ := x.(bson.D)
				if match(d, sq) {
					any = true
				} else {
					every = false
				}
			}
			switch e.Key {
			case "$and":
				if !every {
					return false
				}
			case "$or":
				if !any {
					return false
				}
			default:
				if any {
					return false
				}
			}
		default:
			v, has := get(d, e.Key)
			if !fieldMatch(v, has, e.Value) {
				return false
			}
		}
	}
	return true
}

func fieldMatch(v any, has bool, cond any) bool {
	ops, isDoc := cond.(bson.D)
	if !isDoc || len(ops) == 0 || !strings.HasPrefix(ops[0].Key, "$") {
		return has && equal(v, cond) || !has && cond == nil
	}
	for _, op := range ops {
		if !opMatch(v, has, op.Key, op.Value) {
			return false
		}
	}
	return true
}

func opMatch(v any, has bool, op string, arg any) bool {
	switch op {
	case "$eq":
		return has && equal(v, arg) || !has && arg == nil
	case "$ne":
		return !opMatch(v, has, "$eq", arg)
	case "$in", "$nin":
		xs, _ := arg.(bson.A)
		in := false
		for _, x := range xs {
			if opMatch(v, has, "$eq", x) {
				in = true
			}
		}
		return in == (op == "$in")
	case "$exists":
		want, _ := arg.(bool)
		return has == want
	case "$not":
		return !fieldMatch(v, has, arg)
	case "$gt", "$gte", "$lt", "$lte":
		if !has {
			return false
		}
		vs := bson.A{v}
		if a, isArr := v.(bson.A); isArr {
			vs = a
		}
		for _, x := range vs {
			if !comparable(x, arg) {
				continue
			}
			c := compare(x, arg)
			if op == "$gt" && c > 0 || op == "$gte" && c >= 0 || op == "$lt" && c < 0 || op == "$lte" && c <= 0 {
				return true
			}
		}
		return false
	}
	return false
}

// equal is MongoDB's equality: numbers by value across types, an array
// holding the value or equal to it.
func equal(v, want any) bool {
	if a, isArr := v.(bson.A); isArr {
		if _, wantArr := want.(bson.A); !wantArr {
			for _, x := range a {
				if equal(x, want) {
					return true
				}
			}
			return false
		}
	}
	x, xn := num(v)
	y, yn := num(want)
	if xn || yn {
		return xn && yn && x == y
	}
	return reflect.DeepEqual(v, want)
}

// comparable reports whether two values are of one comparison class
// (numbers, strings), the only ones a range compares.
func comparable(a, b any) bool {
	_, an := num(a)
	_, bn := num(b)
	if an || bn {
		return an && bn
	}
	_, as := a.(string)
	_, bs := b.(string)
	return as && bs
}

// compare orders two values of one class: numbers, then strings.
func compare(a, b any) int {
	x, xn := num(a)
	y, yn := num(b)
	switch {
	case xn && yn:
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case xn:
		return -1
	case yn:
		return 1
	}
	as, _ := a.(string)
	bs, _ := b.(string)
	return strings.Compare(as, bs)
}

// queryFields lists the fields a query names.
func queryFields(q bson.D, out map[string]bool) {
	for _, e := range q {
		if strings.HasPrefix(e.Key, "$") {
			subs, _ := e.Value.(bson.A)
			for _, x := range subs {
				if sq, ok := x.(bson.D); ok {
					queryFields(sq, out)
				}
			}
			continue
		}
		out[e.Key] = true
	}
}
