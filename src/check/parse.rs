//! One line of bytes read once into a JSON value, noting on the way what a `Value`
//! cannot keep: keys given twice, and ids as written.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// What parsing a line noted besides its value.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// The first key found twice in one object. JSON leaves its meaning open, and
    /// serde_json's `Value` keeps only the last, so such a line is refused.
    pub first_repeated: Option<RepeatedKey>,
    /// The message has `id` twice, with different values: its id cannot be read.
    pub conflicting_ids: bool,
    /// The message's `id` as written (the last one, when there are two).
    pub id: Option<String>,
    /// `params.requestId` as written: a cancellation names an id with it.
    pub request_id: Option<String>,
}

#[derive(Debug)]
pub(super) struct RepeatedKey {
    /// The top-level member it is in, or `None` when the message repeats a member.
    pub member: Option<String>,
    pub key: String,
}

/// Parses one line into a `Value`, noting repeated keys and ids as written.
pub(super) fn parse(line: &[u8]) -> Result<(Value, Seen), serde_json::Error> {
    let seen = RefCell::new(Seen::default());
    let mut deserializer = serde_json::Deserializer::from_slice(line);
    let value = Noting {
        seen: &seen,
        place: Place::Message,
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok((value, seen.into_inner()))
}

/// Where in the message a value is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place<'k> {
    /// The message itself.
    Message,
    /// The value of a top-level member.
    Member(&'k str),
    /// Deeper inside a top-level member.
    Below(&'k str),
}

impl<'k> Place<'k> {
    fn member(self) -> Option<&'k str> {
        match self {
            Place::Message => None,
            Place::Member(member) | Place::Below(member) => Some(member),
        }
    }

    fn of<'a>(self, key: &'a str) -> Place<'a>
    where
        'k: 'a,
    {
        match self.member() {
            None => Place::Member(key),
            Some(member) => Place::Below(member),
        }
    }
}

/// Builds a `Value` as serde_json's own deserializer does, and notes what [`Seen`]
/// holds.
#[derive(Clone, Copy)]
struct Noting<'r, 'k> {
    seen: &'r RefCell<Seen>,
    place: Place<'k>,
}

impl<'de> DeserializeSeed<'de> for Noting<'_, '_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Noting<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        let below = Noting {
            seen: self.seen,
            place: self.place.of(""),
        };
        while let Some(item) = seq.next_element_seed(below)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let below = Noting {
                seen: self.seen,
                place: self.place.of(&key),
            };
            let value = match self.written_slot(&key) {
                Some(slot) => below.written(&mut map, slot)?,
                None => map.next_value_seed(below)?,
            };
            if let Some(earlier) = object.get(&key) {
                self.note_repeated(&key, earlier, &value);
            }
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// Which id as written a member is.
#[derive(Clone, Copy)]
enum Slot {
    Id,
    RequestId,
}

impl Noting<'_, '_> {
    /// Whether the member `key` of the object being read is an id whose text is kept.
    fn written_slot(&self, key: &str) -> Option<Slot> {
        match (self.place, key) {
            (Place::Message, "id") => Some(Slot::Id),
            (Place::Member("params"), "requestId") => Some(Slot::RequestId),
            _ => None,
        }
    }

    /// Reads the next value as written, keeps its text in `slot`, then reads that text
    /// into a value as everything else is read. An id is a few bytes; only its bytes
    /// are read twice.
    fn written<'de, A: MapAccess<'de>>(self, map: &mut A, slot: Slot) -> Result<Value, A::Error> {
        let raw: Box<RawValue> = map.next_value()?;
        let mut deserializer = serde_json::Deserializer::from_str(raw.get());
        let value = self
            .deserialize(&mut deserializer)
            .map_err(|e| A::Error::custom(without_position(&e)))?;
        let text = Some(raw.get().to_owned());
        let mut seen = self.seen.borrow_mut();
        match slot {
            Slot::Id => seen.id = text,
            Slot::RequestId => seen.request_id = text,
        }
        Ok(value)
    }

    fn note_repeated(&self, key: &str, earlier: &Value, value: &Value) {
        let mut seen = self.seen.borrow_mut();
        if self.place == Place::Message && key == "id" && earlier != value {
            seen.conflicting_ids = true;
        }
        if seen.first_repeated.is_none() {
            seen.first_repeated = Some(RepeatedKey {
                member: self.place.member().map(str::to_owned),
                key: key.to_owned(),
            });
        }
    }
}

/// An error's message without the position, which was within the id's own text.
fn without_position(error: &serde_json::Error) -> String {
    let message = error.to_string();
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message,
    }
}

/// Replaces every `\u` escape of a lone UTF-16 surrogate (one that is not half of a
/// pair) with `\uFFFD`, the replacement character. JavaScript's `JSON.stringify`
/// writes lone surrogates this way, and serde_json refuses them; a pair stays the
/// character it encodes. The escapes have the same length, so positions in error
/// messages do not move.
pub(super) fn replace_lone_surrogates(line: &[u8]) -> Cow<'_, [u8]> {
    const REPLACEMENT: &[u8; 6] = b"\\uFFFD";
    let unit_at = |at: usize| -> Option<u16> {
        let escape = line.get(at..at + 6)?;
        let hex = escape.strip_prefix(b"\\u")?;
        if !hex.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    };
    let mut patched: Option<Vec<u8>> = None;
    let mut from = 0;
    while let Some(found) = line
        .get(from..)
        .and_then(|rest| memchr::memchr(b'\\', rest))
    {
        let at = from + found;
        // In valid JSON every backslash starts an escape; the escaped byte is skipped.
        from = at + 2;
        let Some(unit) = unit_at(at) else { continue };
        from = at + 6;
        let lone = match unit {
            0xD800..=0xDBFF => match unit_at(at + 6) {
                Some(0xDC00..=0xDFFF) => {
                    from = at + 12;
                    false
                }
                _ => true,
            },
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            patched.get_or_insert_with(|| line.to_vec())[at..at + 6].copy_from_slice(REPLACEMENT);
        }
    }
    patched.map_or(Cow::Borrowed(line), Cow::Owned)
}

/// The members of a JSON object, each as written; `None` unless `json` is an object
/// with no key twice. serde_json reads raw values without a limit on nesting and
/// without converting numbers, so this reads objects that [`parse`] refuses: only a
/// line that [`parse`] refused is read with it, to find its id.
pub(super) fn members(json: &[u8]) -> Option<BTreeMap<String, &RawValue>> {
    struct Members;
    impl<'de> Visitor<'de> for Members {
        type Value = Option<BTreeMap<String, &'de RawValue>>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut members = BTreeMap::new();
            let mut repeated = false;
            while let Some((key, value)) = map.next_entry::<String, &RawValue>()? {
                repeated |= members.insert(key, value).is_some();
            }
            Ok((!repeated).then_some(members))
        }
    }
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let members = serde::Deserializer::deserialize_map(&mut deserializer, Members).ok()?;
    deserializer.end().ok()?;
    members
}
