#include "topology/xml.h"

#include <cstdio>

namespace weft::topo {

const std::string* XmlElement::attr(std::string_view key) const {
  for (const XmlAttr& a : attrs)
    if (a.key == key) return &a.value;
  return nullptr;
}

void XmlElement::setAttr(std::string_view key, std::string value) {
  for (XmlAttr& a : attrs) {
    if (a.key == key) {
      a.value = std::move(value);
      return;
    }
  }
  attrs.push_back(XmlAttr{std::string(key), std::move(value)});
}

namespace {

// Nesting deeper than this is not a topology (real ones are under 15 levels); refusing it keeps a
// hostile file from exhausting the stack of the recursive reader.
constexpr int kMaxDepth = 128;

bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == ':';
}
bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class Reader {
 public:
  Reader(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  bool parseDocument(XmlElement* root, std::string* error) {
    error_ = error;
    bool haveRoot = false;
    for (;;) {
      if (!skipMisc()) return false;
      if (pos_ >= text_.size()) break;
      if (text_[pos_] != '<') return fail("unexpected text outside any element");
      if (haveRoot) return fail("a second top-level element (the file must have exactly one)");
      if (!parseElement(root, 0)) return false;
      haveRoot = true;
    }
    if (!haveRoot) return fail("no element found (empty file?)");
    return true;
  }

 private:
  bool fail(const std::string& what) {
    *error_ = source_ + ":" + std::to_string(line_) + ": " + what;
    return false;
  }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  void advance(size_t n = 1) {
    for (size_t i = 0; i < n && pos_ < text_.size(); ++i)
      if (text_[pos_++] == '\n') ++line_;
  }
  bool startsWith(std::string_view s) const { return text_.substr(pos_, s.size()) == s; }
  void skipSpace() {
    while (pos_ < text_.size() && isSpace(text_[pos_])) advance();
  }

  // Skips white space, comments and <?...?> declarations.
  bool skipMisc() {
    for (;;) {
      skipSpace();
      if (startsWith("<!--")) {
        int startLine = line_;
        size_t end = text_.find("-->", pos_ + 4);
        if (end == std::string_view::npos) {
          line_ = startLine;
          return fail("comment is never closed with -->");
        }
        advance(end + 3 - pos_);
      } else if (startsWith("<?")) {
        size_t end = text_.find("?>", pos_ + 2);
        if (end == std::string_view::npos) return fail("<? declaration is never closed with ?>");
        advance(end + 2 - pos_);
      } else if (startsWith("<!")) {
        return fail("DOCTYPE and CDATA sections are not supported");
      } else {
        return true;
      }
    }
  }

  bool parseName(std::string* out, const char* what) {
    size_t start = pos_;
    while (pos_ < text_.size() && isNameChar(text_[pos_])) advance();
    if (pos_ == start) {
      char c = peek();
      return fail(std::string("expected ") + what + ", found " +
                  (c == '\0' ? std::string("end of file") : "'" + std::string(1, c) + "'"));
    }
    out->assign(text_.substr(start, pos_ - start));
    return true;
  }

  bool decodeEntities(std::string_view raw, std::string* out) {
    out->clear();
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '&') {
        out->push_back(raw[i]);
        continue;
      }
      size_t semi = raw.find(';', i);
      std::string_view ent = semi == std::string_view::npos ? raw.substr(i) : raw.substr(i, semi - i + 1);
      if (ent == "&amp;")
        out->push_back('&');
      else if (ent == "&lt;")
        out->push_back('<');
      else if (ent == "&gt;")
        out->push_back('>');
      else if (ent == "&quot;")
        out->push_back('"');
      else if (ent == "&apos;")
        out->push_back('\'');
      else
        return fail("unknown entity \"" + std::string(ent.substr(0, 16)) + "\" in an attribute value");
      i += ent.size() - 1;
    }
    return true;
  }

  bool parseAttribute(XmlElement* el) {
    XmlAttr a;
    if (!parseName(&a.key, "an attribute name")) return false;
    skipSpace();
    if (peek() != '=') return fail("attribute \"" + a.key + "\" of <" + el->name + "> has no value (expected =)");
    advance();
    skipSpace();
    char quote = peek();
    if (quote != '"' && quote != '\'')
      return fail("value of attribute \"" + a.key + "\" of <" + el->name + "> must be quoted");
    int startLine = line_;
    advance();
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) {
      line_ = startLine;
      return fail("value of attribute \"" + a.key + "\" of <" + el->name + "> is never closed");
    }
    std::string_view raw = text_.substr(pos_, end - pos_);
    if (raw.find('<') != std::string_view::npos) {
      line_ = startLine;
      return fail("value of attribute \"" + a.key + "\" of <" + el->name + "> contains '<' (missing quote?)");
    }
    if (!decodeEntities(raw, &a.value)) return false;
    advance(end + 1 - pos_);
    if (el->attr(a.key) != nullptr) return fail("attribute \"" + a.key + "\" appears twice in <" + el->name + ">");
    el->attrs.push_back(std::move(a));
    return true;
  }

  // At '<' of a start tag; reads through the matching end tag.
  bool parseElement(XmlElement* el, int depth) {
    if (depth >= kMaxDepth) return fail("elements nest deeper than " + std::to_string(kMaxDepth) + " levels");
    el->line = line_;
    advance();  // '<'
    if (peek() == '/') return fail("closing tag with no element open");
    if (!parseName(&el->name, "an element name after '<'")) return false;
    for (;;) {
      bool spaced = isSpace(peek());
      skipSpace();
      char c = peek();
      if (c == '/') {
        if (peek(1) != '>') return fail("expected '>' after '/' in <" + el->name + ">");
        advance(2);
        return true;
      }
      if (c == '>') {
        advance();
        break;
      }
      if (c == '\0') return fail("file ends inside the start tag of <" + el->name + ">");
      if (!spaced) return fail("expected space, '>' or '/>' in <" + el->name + ">, found '" + std::string(1, c) + "'");
      if (!parseAttribute(el)) return false;
    }
    for (;;) {
      if (!skipMisc()) return false;
      if (pos_ >= text_.size())
        return fail("file ends before </" + el->name + "> (element opened on line " + std::to_string(el->line) + ")");
      if (text_[pos_] != '<') return fail("unexpected text inside <" + el->name + ">");
      if (peek(1) == '/') {
        advance(2);
        std::string closing;
        if (!parseName(&closing, "an element name after '</'")) return false;
        skipSpace();
        if (peek() != '>') return fail("expected '>' to end </" + closing + ">");
        if (closing != el->name)
          return fail("</" + closing + "> does not match <" + el->name + "> opened on line " +
                      std::to_string(el->line));
        advance();
        return true;
      }
      el->children.emplace_back();
      if (!parseElement(&el->children.back(), depth + 1)) return false;
    }
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1;
  std::string* error_ = nullptr;
};

void escapeInto(std::string* out, const std::string& v) {
  for (char c : v) {
    switch (c) {
      case '&': *out += "&amp;"; break;
      case '<': *out += "&lt;"; break;
      case '>': *out += "&gt;"; break;
      case '"': *out += "&quot;"; break;
      default: out->push_back(c);
    }
  }
}

void writeElement(std::string* out, const XmlElement& el, int indent) {
  out->append(static_cast<size_t>(indent), ' ');
  *out += "<" + el.name;
  for (const XmlAttr& a : el.attrs) {
    *out += " " + a.key + "=\"";
    escapeInto(out, a.value);
    *out += "\"";
  }
  if (el.children.empty()) {
    *out += "/>\n";
    return;
  }
  *out += ">\n";
  for (const XmlElement& c : el.children) writeElement(out, c, indent + 2);
  out->append(static_cast<size_t>(indent), ' ');
  *out += "</" + el.name + ">\n";
}

}  // namespace

bool parseXml(std::string_view text, const std::string& source, XmlElement* root, std::string* error) {
  *root = XmlElement{};
  Reader reader(text, source);
  return reader.parseDocument(root, error);
}

std::string writeXml(const XmlElement& root) {
  std::string out;
  writeElement(&out, root, 0);
  return out;
}

}  // namespace weft::topo
