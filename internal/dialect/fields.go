package dialect

import (
	"github.com/tidwall/gjson"

	"github.com/switchyard-gw/switchyard/internal/failure"
)

// Readers of one request member, shared by the request decoders. Each takes the member's value
// (absent and null read as the zero value, or nil) and its name for the error, an invalid_request
// *failure.Error naming the member (failure.Invalid) when the value has the wrong JSON type.

// BoolField reads a boolean member: absent or null is false.
func BoolField(v gjson.Result, name string) (bool, error) {
	switch v.Type {
	case gjson.True:
		return true, nil
	case gjson.False, gjson.Null: // an absent member's Type is Null
		return false, nil
	}
	return false, failure.Invalid(name, name+" must be a boolean")
}

// StringField reads a string member: absent or null is "".
func StringField(v gjson.Result, name string) (string, error) {
	switch v.Type {
	case gjson.String:
		return v.Str, nil
	case gjson.Null:
		return "", nil
	}
	return "", failure.Invalid(name, name+" must be a string")
}

// FloatField reads a number member: absent or null is nil.
func FloatField(v gjson.Result, name string) (*float64, error) {
	switch v.Type {
	case gjson.Null:
		return nil, nil
	case gjson.Number:
		f := v.Num
		return &f, nil
	}
	return nil, failure.Invalid(name, name+" must be a number")
}

// IntField reads a member that must be a non-negative integer no larger than 2^53 (exact in a
// float64): absent or null is an error too, so callers check presence first.
func IntField(v gjson.Result, name string) (int64, error) {
	if v.Type != gjson.Number || v.Num < 0 || v.Num > 1<<53 || v.Num != float64(int64(v.Num)) {
		return 0, failure.Invalid(name, name+" must be an integer from 0 to 2^53")
	}
	return int64(v.Num), nil
}
