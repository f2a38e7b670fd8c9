// A small XML reader and writer, enough for NCCL's topology files: elements, attributes in single
// or double quotes, self-closing tags, comments, an optional <?xml ...?> declaration and the five
// predefined entities. Text content between elements is not part of that format and is rejected,
// so a stray character is reported where it is rather than silently changing the tree.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace weft::topo {

struct XmlAttr {
  std::string key;
  std::string value;
};

struct XmlElement {
  std::string name;
  std::vector<XmlAttr> attrs;  // in file order
  std::vector<XmlElement> children;
  int line = 0;  // where the start tag begins (1-based; 0 = built in memory)

  // The value of attribute key, or nullptr when the element has none.
  const std::string* attr(std::string_view key) const;
  // Sets key to value, replacing an existing value in place or appending a new attribute.
  void setAttr(std::string_view key, std::string value);
};

// Parses text (source names it in messages, usually the file path). On failure returns false and
// sets *error to "<source>:<line>: <what is wrong>".
bool parseXml(std::string_view text, const std::string& source, XmlElement* root, std::string* error);

// Writes root in the layout NCCL's own dumps use: two spaces of indent per level, attributes in
// element order, childless elements self-closed, one element per line.
std::string writeXml(const XmlElement& root);

}  // namespace weft::topo
