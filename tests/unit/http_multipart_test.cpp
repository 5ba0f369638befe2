// multipart/form-data bodies: what clients send (curl -F, the OpenAI SDKs'
// FormData), and malformed bodies that must be refused with a reason.
#include <gtest/gtest.h>

#include <string>

#include "http/multipart.h"

namespace hearth::http {
namespace {

TEST(Multipart, Boundary) {
  EXPECT_EQ(multipart_boundary("multipart/form-data; boundary=abc123"), "abc123");
  EXPECT_EQ(multipart_boundary("Multipart/Form-Data;boundary=\"a b;c\""), "a b;c");
  EXPECT_EQ(multipart_boundary("application/json"), std::nullopt);
  EXPECT_THROW(multipart_boundary("multipart/form-data"), MultipartError);
  EXPECT_THROW(multipart_boundary("multipart/form-data; boundary=\"open"), MultipartError);
  EXPECT_THROW(multipart_boundary("multipart/form-data; boundary=" + std::string(71, 'x')), MultipartError);
}

TEST(Multipart, FieldsAndFiles) {
  const std::string audio("RIFF\0\r\n--not-it\r\n", 17);
  const std::string body =
      "--XyZ\r\n"
      "Content-Disposition: form-data; name=\"model\"\r\n\r\n"
      "whisper-1\r\n"
      "--XyZ\r\n"
      "content-disposition: form-data; name=\"file\"; filename=\"a;b \\\"c\\\".wav\"\r\n"
      "Content-Type: audio/wav\r\n\r\n" +
      audio +
      "\r\n--XyZ\r\n"
      "Content-Disposition: form-data; name=\"empty\"\r\n\r\n"
      "\r\n--XyZ--\r\n";
  const auto parts = parse_multipart(body, "XyZ");
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].name, "model");
  EXPECT_FALSE(parts[0].filename);
  EXPECT_EQ(parts[0].data, "whisper-1");
  EXPECT_EQ(parts[1].name, "file");
  EXPECT_EQ(parts[1].filename, "a;b \"c\".wav");
  EXPECT_EQ(parts[1].content_type, "audio/wav");
  EXPECT_EQ(parts[1].data, audio);
  EXPECT_EQ(parts[2].data, "");
}

TEST(Multipart, PreambleAndEpilogue) {
  const auto parts = parse_multipart(
      "ignored preamble\r\n--b\r\nContent-Disposition: form-data; name=x\r\n\r\n1\r\n--b--\r\nepilogue",
      "b");
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].name, "x");
  EXPECT_EQ(parts[0].data, "1");
}

TEST(Multipart, MalformedBodiesAreRefused) {
  const char* bad[] = {
      "",
      "no boundary here",
      "--b\r\nContent-Disposition: form-data; name=x\r\n\r\nno closing boundary",
      "--b\r\nContent-Disposition: form-data; name=x\r\nheaders never end",
      "--b\r\nContent-Type: text/plain\r\n\r\nno disposition\r\n--b--",
      "--b\r\nContent-Disposition: attachment; name=x\r\n\r\n1\r\n--b--",
      "--b\r\nContent-Disposition: form-data\r\n\r\nno name\r\n--b--",
      "--b\r\nno colon\r\n\r\n1\r\n--b--",
      "--bX\r\n",
  };
  for (const char* body : bad) EXPECT_THROW(parse_multipart(body, "b"), MultipartError) << body;
}

}  // namespace
}  // namespace hearth::http
