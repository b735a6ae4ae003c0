//! memtrail's embeddings: a static model distilled on this machine from all-MiniLM-L6-v2
//! (see `docs/embeddings.md` for why and for the figures), its install, and text → vectors.

pub mod bert;
pub mod files;
pub mod install;
pub mod model;
pub mod remote;
pub mod tokenizer;

pub use model::{Encoder, StaticModel, Transformer};
pub mod search;
pub mod service;
pub mod sidefile;
