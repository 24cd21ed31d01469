//! Shale's MySQL-compatible server (`shale serve`): the wire protocol over a
//! [`shale_sql::Session`] per connection.
