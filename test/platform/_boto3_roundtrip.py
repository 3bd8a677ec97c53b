"""boto3 (from PyPI) against the embedded platform's S3 API: argv = endpoint, key id, secret, bucket.
Prints one JSON object of what it saw; volumes-s3.test.ts checks it."""
import io
import json
import sys
import urllib.request

import boto3
from botocore.config import Config

endpoint, key_id, secret, bucket = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key_id, aws_secret_access_key=secret,
                  region_name="local", config=Config(s3={"addressing_style": "path"}))
seen = {}
seen["location"] = s3.get_bucket_location(Bucket=bucket)["LocationConstraint"]
s3.put_object(Bucket=bucket, Key="py/hello world+.txt", Body=b"from boto3")
seen["get"] = s3.get_object(Bucket=bucket, Key="py/hello world+.txt")["Body"].read().decode()
seen["range"] = s3.get_object(Bucket=bucket, Key="py/hello world+.txt", Range="bytes=5-9")["Body"].read().decode()
# upload_fileobj goes multipart over 8 MiB (boto3's s3transfer)
big = bytes(range(256)) * (9 * 1024 * 4)
s3.upload_fileobj(io.BytesIO(big), bucket, "py/big.bin")
seen["big_etag"] = s3.head_object(Bucket=bucket, Key="py/big.bin")["ETag"]
out = io.BytesIO()
s3.download_fileobj(bucket, "py/big.bin", out)
seen["big_same"] = out.getvalue() == big
# a presigned URL (query-string SigV4): fetched with no client at all
url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "py/hello world+.txt"}, ExpiresIn=60)
seen["presigned"] = urllib.request.urlopen(url).read().decode()
try:
    urllib.request.urlopen(url.replace("X-Amz-Signature=", "X-Amz-Signature=0"))
    seen["tampered"] = "accepted"
except urllib.error.HTTPError as e:
    seen["tampered"] = e.code
listing = s3.list_objects_v2(Bucket=bucket, Delimiter="/")
seen["prefixes"] = [p["Prefix"] for p in listing.get("CommonPrefixes", [])]
seen["keys"] = sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="py/")["Contents"])
s3.delete_object(Bucket=bucket, Key="py/big.bin")
try:
    s3.get_object(Bucket=bucket, Key="py/big.bin")
    seen["deleted"] = "still there"
except s3.exceptions.NoSuchKey:
    seen["deleted"] = "NoSuchKey"
print(json.dumps(seen))
