// The values a Jinja template computes with, with Python's semantics: the
// types a chat template sees (None, bool, int, float, str, list, tuple, dict),
// jinja2's default Undefined, and objects (macros, namespaces, loop, bound
// methods, built-in functions). Lists and dicts are shared by reference, as
// in Python; the engine never mutates them after construction (jinja2's
// ImmutableSandboxedEnvironment forbids it), except namespaces.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hearth::text::jinja {

class Value;
class Object;
class Interpreter;

enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Object };

// What a ListData-backed value is in Python. Besides list and tuple,
// templates meet lazy results: jinja2's map/select/... filters return
// generators (one-shot, no len(), always true, not JSON serializable) and
// dict.items() returns a view; hearth keeps those distinctions because they
// change output (`|tojson` of a generator is an error, `if gen` is true).
enum class Seq : uint8_t { List, Tuple, Generator, ReverseIterator, DictItems, DictKeys, DictValues, Range };

// Values nest at most this deep (lists in lists...): deeper structures are
// refused when built, so printing, comparing, serializing and freeing them
// never recurses past it.
constexpr int kMaxValueDepth = 1000;

// Any one string a template builds, its output included, holds at most this
// many bytes (eight times the prompt of a million-token context), and any one
// list at most kMaxListBytes (its elements' own bytes, strings included; a
// nested list or dict is shared, not counted again). Beyond, a TemplateError
// of kind Limit, so no template can take the memory of the process.
constexpr size_t kMaxTextBytes = size_t{32} << 20;
constexpr size_t kMaxListBytes = size_t{128} << 20;
// Throws that Limit error for a string of `bytes` bytes about to be built
// (a padding width, a repetition) past kMaxTextBytes.
void check_text_size(uint64_t bytes);
// The same for a list of `items` elements about to be built (kMaxListBytes).
void check_list_size(uint64_t items);

struct ListData {
  std::vector<Value> items;
  int depth = 1;  // 1 + the deepest element's depth
  Seq seq = Seq::List;
  mutable bool consumed = false;  // generators and iterators are one-shot
  std::string range_repr;         // "range(0, 5)" for Seq::Range
  size_t bytes = 0;               // sizeof(Value) per element plus their string bytes
  mutable bool charged = false;   // its building was counted in the render's work (eval.h)
};

// Insertion-ordered dict; keys are hashable values (str, int, float, bool,
// None, tuples of those). Python equates True, 1 and 1.0 as keys.
struct DictData {
  std::vector<std::pair<Value, Value>> items;
  std::unordered_map<std::string, size_t> index;
  int depth = 1;

  const Value* find(const Value& key) const;
  const Value* find(const std::string& key) const;
  void set(const Value& key, Value value);
  size_t size() const;  // below Value: items' element type must be complete (clang)
};

class Value {
 public:
  Value() : i_(0) {}  // Undefined, without a hint
  Value(bool b) : kind_(Kind::Bool), i_(b) {}
  Value(int v) : kind_(Kind::Int), i_(v) {}
  Value(int64_t v) : kind_(Kind::Int), i_(v) {}
  Value(double v) : kind_(Kind::Float), f_(v) {}
  Value(std::string s) : kind_(Kind::String), i_(0), s_(std::move(s)) {}
  Value(const char* s) : kind_(Kind::String), i_(0), s_(s) {}

  static Value none();
  // `hint` is the message raised when the value is used: "'x' is undefined".
  static Value undefined(std::string hint);
  // The sandbox's answer to a forbidden attribute (list.append, __class__):
  // undefined, and using it raises a TemplateError of kind Security.
  static Value unsafe_undefined(std::string hint);
  static Value list(std::vector<Value> items = {});
  static Value tuple(std::vector<Value> items);
  static Value sequence(Seq seq, std::vector<Value> items);
  // Python's range object: the numbers, and its repr ("range(0, 5)").
  static Value range(std::vector<Value> numbers, std::string repr);
  static Value dict();
  static Value dict(std::shared_ptr<DictData> d);
  static Value object(std::shared_ptr<Object> o);
  // A markupsafe.Markup string (from |safe or |escape): `+` escapes the other side.
  static Value markup(std::string s);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  // A Python list or tuple (not a generator or view).
  bool is_list() const { return kind_ == Kind::List && (list_->seq == Seq::List || list_->seq == Seq::Tuple); }
  bool is_tuple() const { return kind_ == Kind::List && list_->seq == Seq::Tuple; }
  // Supports len() and v[i]: list, tuple, range.
  bool is_indexable() const { return is_list() || (kind_ == Kind::List && list_->seq == Seq::Range); }
  // A one-shot generator / iterator.
  bool is_iterator() const {
    return kind_ == Kind::List && (list_->seq == Seq::Generator || list_->seq == Seq::ReverseIterator);
  }
  Seq seq() const { return list_->seq; }
  const ListData& list_data() const { return *list_; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_markup() const { return kind_ == Kind::String && markup_; }

  bool as_bool() const { return i_ != 0; }
  int64_t as_int() const { return i_; }  // Int or Bool
  double as_float() const { return kind_ == Kind::Float ? f_ : static_cast<double>(i_); }
  const std::string& str() const { return s_; }  // String payload, or the Undefined hint
  // The elements of a ListData-backed value, without consuming an iterator
  // (use iterate() for Python iteration).
  const std::vector<Value>& items() const { return list_->items; }
  const DictData& dict_data() const { return *dict_; }
  const std::shared_ptr<DictData>& dict_ptr() const { return dict_; }
  Object& obj() const { return *obj_; }
  const std::shared_ptr<Object>& obj_ptr() const { return obj_; }

  bool truthy() const;           // Python bool()
  std::string to_str() const;    // Python str(); Undefined prints as ""
  std::string repr() const;      // Python repr()
  std::string type_name() const; // Python type name: str, int, list, dict, NoneType...
  int depth() const;             // nesting depth: 0 for scalars

  // Raises the Undefined's error (TemplateError kind Undefined).
  [[noreturn]] void fail_undefined() const;

 private:
  Kind kind_ = Kind::Undefined;
  bool markup_ = false;  // String: a Markup. Undefined: an unsafe attribute.
  union {
    int64_t i_;
    double f_;
  };
  std::string s_;
  std::shared_ptr<ListData> list_;
  std::shared_ptr<DictData> dict_;
  std::shared_ptr<Object> obj_;
};

inline size_t DictData::size() const { return items.size(); }

// Positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;

  // The argument named `name` or at position `pos` (npos: keyword only), or
  // nullopt when neither was given.
  std::optional<Value> get(size_t pos, const std::string& name) const;
  Value get_or(size_t pos, const std::string& name, Value fallback) const;
  // Throws if more than `max_positional` positional args or an unknown keyword.
  void check(const char* what, size_t max_positional, std::initializer_list<const char*> names) const;
  static constexpr size_t npos = static_cast<size_t>(-1);
};

// Anything that is not plain data: callables and objects with attributes.
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string type_name() const = 0;
  virtual std::string repr() const;
  // Attribute lookup; nullopt when there is no such attribute.
  virtual std::optional<Value> getattr(const std::string& name) const;
  // Namespace attribute assignment; false if the object does not allow it.
  virtual bool setattr(const std::string& name, const Value& v);
  virtual bool callable() const { return false; }
  virtual int depth() const { return 0; }  // nesting depth of the data it holds
  virtual Value call(Interpreter& in, CallArgs& args);
};

// Python semantics of comparisons. equals never throws; less throws a
// TemplateError (kind Type) for unorderable operands.
bool equals(const Value& a, const Value& b);
bool less(const Value& a, const Value& b);
// Python `a in b`.
bool contains(const Value& container, const Value& item);
// The work of such a search through `container`, in the render's steps
// (eval.h): one per element, one per 16 bytes of a string.
int64_t scan_cost(const Value& container);

// The dict-key identity of a value; throws for unhashable values.
std::string hash_key(const Value& v);

// Python iteration: list/tuple items, dict keys, string characters;
// Undefined iterates as empty. Throws for non-iterables.
std::vector<Value> iterate(const Value& v);
// Python len(); throws for values without a length.
int64_t length(const Value& v);

// markupsafe.escape: & < > ' " as HTML entities.
std::string html_escape(const std::string& s);
// Python repr() of a str.
std::string repr_string(const std::string& s);
// Python repr()/str() of a float.
std::string repr_float(double d);

}  // namespace hearth::text::jinja
