// The chat web page served at / (self-contained HTML, compiled in).
#pragma once

namespace hearth::server {

const char* web_index_html();

}  // namespace hearth::server
