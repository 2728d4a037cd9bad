//! A candidate's value, built in one pass over its text: numbers as JavaScript's `JSON.parse`
//! holds them, and at most [`MAX_ANSWER_VALUES`] values, so a huge answer cannot build a huge tree.
//! The same pass writes the value's canonical text, so a valid answer's tree is never walked a
//! second time to print it (a walk of a tree larger than the caches costs about a third of the
//! parse).

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::canonical::{
    canonical_json_sized, format_number, write_number, write_string, write_value,
};

/// Most JSON values one candidate may hold to be validated: every scalar, array, object and object
/// key counts one. A tree costs about 160 bytes a value (BENCHMARKS.md), so this keeps one
/// answer's tree under about 200 MiB whatever its size; the 8 MiB answer there holds 653,172.
pub const MAX_ANSWER_VALUES: usize = 1_000_000;

/// Largest integer every double below it represents exactly (2^53).
const EXACT_INTEGERS: u64 = 1 << 53;

/// What became of one candidate's text.
pub(crate) enum Built {
    /// The value, numbers rounded to doubles as `JSON.parse` rounds them, and its canonical text.
    Value(Value, String),
    /// Not JSON: serde_json's own error, as `serde_json::from_str::<Value>` reports it.
    Invalid(serde_json::Error),
    /// JSON with more than [`MAX_ANSWER_VALUES`] values.
    TooLarge,
}

/// Candidates longer than this are checked by a pass that builds nothing before their tree is
/// built: text that is not JSON after all, or JSON too large to validate, must not cost a tree on
/// its way to its refusal.
const CHECK_FIRST_BYTES: usize = 64 * 1024;

/// Parses `text` (one JSON value, whitespace around it allowed) into a capped tree and its
/// canonical text.
pub(crate) fn build(text: &str) -> Built {
    if text.len() > CHECK_FIRST_BYTES {
        match check(text) {
            Ok(false) => {}
            Ok(true) => return Built::TooLarge,
            Err(err) => return Built::Invalid(err),
        }
    }
    let budget = Budget {
        left: Cell::new(MAX_ANSWER_VALUES),
        exceeded: Cell::new(false),
        // The canonical text is about as long as the compact source: one allocation.
        out: RefCell::new(String::with_capacity(text.len())),
        duplicate: Cell::new(false),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let built = Node { budget: &budget }
        .deserialize(&mut de)
        .and_then(|value| de.end().map(|()| value));
    match built {
        // A duplicate key keeps its first position and takes its last value: the text written as
        // the members came holds both, so it is printed again from the tree.
        Ok(value) if budget.duplicate.get() => {
            let canonical = canonical_json_sized(&value, text.len());
            Built::Value(value, canonical)
        }
        Ok(value) => Built::Value(value, budget.out.into_inner()),
        // The cap was reached first: whether the rest is JSON decides between the two refusals.
        Err(_) if budget.exceeded.get() => match check(text) {
            Ok(_) => Built::TooLarge,
            Err(err) => Built::Invalid(err),
        },
        Err(err) => Built::Invalid(err),
    }
}

/// Whether `text` is one JSON value, with serde_json's own verdict and error, building nothing
/// (memory is the nesting depth, at most 128 levels); the value counts as [`MAX_ANSWER_VALUES`]
/// counts, so `Ok` holds whether it is too large to build.
pub(crate) fn check(text: &str) -> Result<bool, serde_json::Error> {
    let count = Cell::new(0);
    let mut de = serde_json::Deserializer::from_str(text);
    Discard(&count).deserialize(&mut de)?;
    de.end()?;
    Ok(count.get() > MAX_ANSWER_VALUES)
}

/// Whether `token` (one JSON number) is a number serde_json holds: a finite double. JSON's grammar
/// allows `1e400`; serde_json refuses it, and so must anything that predicts its verdict.
pub(crate) fn number_in_range(token: &str) -> bool {
    serde_json::from_str::<Value>(token).is_ok()
}

/// Values left to build in one candidate, and the canonical text written so far.
struct Budget {
    left: Cell<usize>,
    exceeded: Cell<bool>,
    out: RefCell<String>,
    /// An object repeated a key: `out` does not hold the value's text.
    duplicate: Cell<bool>,
}

impl Budget {
    /// Appends `null`, `true` or `false`.
    fn word(&self, value: Value) -> Value {
        write_value(&mut self.out.borrow_mut(), &value);
        value
    }

    /// Appends an integer a double holds exactly, which prints as itself.
    fn integer<I: itoa::Integer + Into<Number>>(&self, n: I) -> Value {
        self.out
            .borrow_mut()
            .push_str(itoa::Buffer::new().format(n));
        Value::Number(n.into())
    }

    /// Appends any other number as JavaScript prints the double it reads as.
    fn double(&self, x: f64) -> Value {
        write_number(&mut self.out.borrow_mut(), x);
        js_double(x)
    }

    fn push(&self, c: char) {
        self.out.borrow_mut().push(c);
    }

    /// Ends an array or object: the separator after its last item becomes the closing bracket.
    fn close(&self, items: usize, bracket: char) {
        let mut out = self.out.borrow_mut();
        if items > 0 {
            out.pop();
        }
        out.push(bracket);
    }

    fn take<E: de::Error>(&self) -> Result<(), E> {
        match self.left.get() {
            0 => {
                self.exceeded.set(true);
                Err(E::custom("too many values"))
            }
            n => {
                self.left.set(n - 1);
                Ok(())
            }
        }
    }
}

/// One value of the tree; the same visits as serde_json's own `Value`, plus the count.
#[derive(Clone, Copy)]
struct Node<'b> {
    budget: &'b Budget,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        self.budget.take()?;
        Ok(self.budget.word(Value::Bool(value)))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        self.budget.take()?;
        if value.unsigned_abs() <= EXACT_INTEGERS {
            return Ok(self.budget.integer(value));
        }
        Ok(self.budget.double(value as f64))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        self.budget.take()?;
        if value <= EXACT_INTEGERS {
            return Ok(self.budget.integer(value));
        }
        Ok(self.budget.double(value as f64))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        self.budget.take()?;
        Ok(self.budget.double(value))
    }

    /// A string read straight from the text: serde_json found no escape in it (and refuses raw
    /// control characters), so its canonical text is itself in quotes.
    fn visit_borrowed_str<E: de::Error>(self, value: &'de str) -> Result<Value, E> {
        self.budget.take()?;
        let mut out = self.budget.out.borrow_mut();
        out.push('"');
        out.push_str(value);
        out.push('"');
        Ok(Value::String(value.to_owned()))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        self.budget.take()?;
        write_string(&mut self.budget.out.borrow_mut(), value);
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        self.budget.take()?;
        write_string(&mut self.budget.out.borrow_mut(), &value);
        Ok(Value::String(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.budget.take()?;
        Ok(self.budget.word(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.budget.take()?;
        self.budget.push('[');
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            self.budget.push(',');
            items.push(item);
        }
        self.budget.close(items.len(), ']');
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.budget.take()?;
        self.budget.push('{');
        let mut members = Map::new();
        while let Some(key) = map.next_key_seed(Key(self.budget))? {
            let value = map.next_value_seed(self)?;
            self.budget.push(',');
            // A duplicate keeps its first position and takes the last value, as `JSON.parse` does.
            if members.insert(key, value).is_some() {
                self.budget.duplicate.set(true);
            }
        }
        self.budget.close(members.len(), '}');
        Ok(Value::Object(members))
    }
}

/// An object's key, counted and printed with its colon as [`Node`] prints a string.
#[derive(Clone, Copy)]
struct Key<'b>(&'b Budget);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    /// As [`Node::visit_borrowed_str`]: no escape, so the key prints as itself.
    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<String, E> {
        self.0.take()?;
        let mut out = self.0.out.borrow_mut();
        out.push('"');
        out.push_str(key);
        out.push_str("\":");
        Ok(key.to_owned())
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<String, E> {
        self.0.take()?;
        let mut out = self.0.out.borrow_mut();
        write_string(&mut out, key);
        out.push(':');
        Ok(key.to_owned())
    }
}

/// The number JavaScript holds for `x`, as the canonical text reads back: an integer below 10^21
/// prints without a point, so it reads back as an integer (of the printed digits, which past 2^53
/// are the shortest ones that round to `x`, padded with zeros); anything else is the double.
fn js_double(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 1e21 {
        if x.abs() <= EXACT_INTEGERS as f64 {
            // -0 prints as 0.
            return if x >= 0.0 {
                Value::Number((x as u64).into())
            } else {
                Value::Number((x as i64).into())
            };
        }
        let printed = format_number(x);
        if let Ok(n) = printed.parse::<u64>() {
            return Value::Number(n.into());
        }
        if let Ok(n) = printed.parse::<i64>() {
            return Value::Number(n.into());
        }
    }
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// A value visited and dropped as it is read, counted as [`Budget`] counts.
#[derive(Clone, Copy)]
struct Discard<'c>(&'c Cell<usize>);

impl Discard<'_> {
    fn count<E>(self) -> Result<(), E> {
        self.0.set(self.0.get() + 1);
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Discard<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        // `deserialize_any`, not `deserialize_ignored_any`: serde_json then reads numbers and
        // strings exactly as for a `Value`, range and surrogate checks included.
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Discard<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        self.count()
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        self.count()
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        self.count()
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        self.count()
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        self.count()
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.count()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.count()?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.count()?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn value(text: &str) -> Value {
        match build(text) {
            Built::Value(v, _) => v,
            Built::Invalid(e) => panic!("invalid: {e}"),
            Built::TooLarge => panic!("too large"),
        }
    }

    #[rstest]
    #[case("1.0")]
    #[case("-0")]
    #[case("9007199254740993")]
    #[case("-9007199254740993")]
    #[case("18446744073709551615")]
    #[case("-9223372036854775808")]
    #[case("1e20")]
    #[case("1e21")]
    #[case("123456789012345678901")]
    #[case("0.1")]
    #[case("2.5e-300")]
    #[case(r#"{"a":[1,2.0,{"b":null,"b":true}],"c":"\u00e9"}"#)]
    fn the_tree_is_what_the_canonical_text_reads_back_as(#[case] text: &str) {
        let canonical = super::super::canonical_json(&value(text));
        let reread: Value = serde_json::from_str(&canonical).unwrap();
        assert_eq!(value(text), reread, "{text} -> {canonical}");
    }

    #[rstest]
    #[case("[]")]
    #[case("{}")]
    #[case("[[],{},[[]],{\"a\":{}}]")]
    #[case(" { \"a\" : [ 1 , 2.50 , -0 , 1e21 , true , null ] , \"b\" : \"x\\ny\\u0001\" } ")]
    #[case(r#"{"a":1,"b":2,"a":3}"#)]
    #[case(r#"[{"k":[1,{"k":2,"k":{"z":[]}}]}]"#)]
    #[case(r#""\u00e9\"\\""#)]
    #[case("9007199254740993")]
    fn the_text_written_while_building_is_the_trees_canonical_text(#[case] text: &str) {
        let Built::Value(value, canonical) = build(text) else {
            panic!("{text} refused");
        };
        assert_eq!(canonical, super::super::canonical_json(&value), "{text}");
    }

    #[rstest]
    #[case("[1,]")]
    #[case("{\"a\" 1}")]
    #[case("1e400")]
    #[case("\"\\ud800\"")]
    #[case("[1] x")]
    #[case("")]
    fn errors_are_serde_jsons_own(#[case] text: &str) {
        let expected = serde_json::from_str::<Value>(text).unwrap_err().to_string();
        match build(text) {
            Built::Invalid(err) => assert_eq!(err.to_string(), expected),
            _ => panic!("{text} accepted"),
        }
        assert_eq!(check(text).unwrap_err().to_string(), expected);
    }

    #[test]
    fn the_check_counts_as_the_build_does() {
        let at_cap = serde_json::to_string(&vec![0; MAX_ANSWER_VALUES - 1]).unwrap();
        assert!(!check(&at_cap).unwrap());
        let over = serde_json::to_string(&vec![0; MAX_ANSWER_VALUES]).unwrap();
        assert!(check(&over).unwrap());
        let keys = r#"{"a":1,"b":{"c":[true,null,"x"]}}"#;
        assert!(!check(keys).unwrap());
    }

    #[test]
    fn more_values_than_the_cap_are_too_large_unless_the_text_is_not_json() {
        let at_cap = serde_json::to_string(&vec![0; MAX_ANSWER_VALUES - 1]).unwrap();
        assert!(matches!(build(&at_cap), Built::Value(..)));
        let over = serde_json::to_string(&vec![0; MAX_ANSWER_VALUES]).unwrap();
        assert!(matches!(build(&over), Built::TooLarge));
        let broken = format!("{}x", &over[..over.len() - 1]);
        assert!(matches!(build(&broken), Built::Invalid(_)));
    }

    #[test]
    fn object_keys_count_against_the_cap() {
        let members: Map<String, Value> = (0..MAX_ANSWER_VALUES / 2)
            .map(|i| (i.to_string(), Value::Null))
            .collect();
        let text = Value::Object(members).to_string();
        assert!(matches!(build(&text), Built::TooLarge));
    }
}
