//! memtrail-web's integration tests (one test binary per crate; one module per area).

mod http;
