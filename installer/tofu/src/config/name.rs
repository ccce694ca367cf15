//! A name the parser gives as a static string (a call's `count`/`for_each`, a collection
//! type's kind), which a file's recorded facts (`facts.rs`) keep as its text and read back
//! as the one static string of that text.

/// A name the parser gives as a static string (a call's `count`/`for_each`, a collection
/// type's kind): recorded as its text and read back as the one static string of that text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Name(pub(crate) &'static str);

impl Name {
    const KNOWN: &'static [&'static str] = &["count", "for_each", "list", "set", "map"];
}

impl serde::Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Name {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let text = String::deserialize(de)?;
        Name::KNOWN
            .iter()
            .find(|k| **k == text)
            .map(|k| Name(k))
            .ok_or_else(|| serde::de::Error::custom("an unknown name"))
    }
}
